"""OAuth bearer tokens for SASL OAUTHBEARER: from a file, or from a token endpoint.

aiokafka asks its token provider for a token whenever it opens a connection to a broker
(`AbstractTokenProvider.token`); a broker with `connections.max.reauth.ms` closes a
connection whose token has expired, so the next one must come with a fresh token.

- `FileTokenProvider`: the token a file holds (a Kubernetes Secret, a sidecar that renews
  it, AWS MSK IAM's signer: docs/deploy.md). The file is read again when it changes (its
  inode, size or modification time: a Secret's update swaps a symlink) and when the token
  it held has expired (the `exp` claim of a JWT; other tokens are taken as they are).
- `EndpointTokenProvider`: OAuth 2.0 client credentials (RFC 6749 §4.4) from a token
  endpoint: the client id and secret in HTTP Basic authentication, the token kept until
  four fifths of its lifetime (`expires_in`, else its JWT `exp`, else 5 minutes) have
  passed, then fetched again; one fetch at a time, however many connections ask.

Neither ever writes a token or a secret into a log line or an error.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote_plus

import aiohttp
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaConnectionError

__all__ = ["EndpointTokenProvider", "FileTokenProvider", "OAuthTokenError", "jwt_expiry"]

_log = logging.getLogger(__name__)

DEFAULT_LIFETIME = 300.0
"""Seconds a token of unknown lifetime (no `expires_in`, not a JWT) is kept."""
REFRESH_AT = 0.8
"""The share of a token's lifetime after which a new one is fetched."""


class OAuthTokenError(KafkaConnectionError):  # type: ignore[misc]
    """No token could be had; `refused` when the token endpoint refused the client's
    credentials (retrying cannot help). A connection error to aiokafka, which then retries
    the connection with backoff as it does when a broker cannot be reached."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def jwt_expiry(token: str) -> float | None:
    """The `exp` claim (Unix seconds) of a JWT (signed or unsecured), or None when the
    token is not one (an opaque token, an AWS MSK IAM token) or has no `exp`."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (binascii.Error, ValueError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


class FileTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """The token held by a file, read again when the file changes or the token expired."""

    def __init__(
        self,
        path: Path,
        read: Callable[[Path], str],
        *,
        extensions: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``read`` gives the file's token (the edge's secret-file reader: it names the
        setting in its errors and never the content); ``extensions`` are sent with it."""
        self.path = path
        self._extensions = dict(extensions or {})
        self._read = read
        self._clock = clock
        self._token: str | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._expires: float | None = None
        self.reads = 0
        """How many times the file was read."""

    async def token(self) -> str:
        try:
            st = os.stat(self.path)
        except OSError as error:
            raise OAuthTokenError(
                f"kafka.security.sasl_oauth_token_file: cannot read {self.path}: "
                f"{error.strerror or error}"
            ) from None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        expired = self._expires is not None and self._expires <= self._clock()
        if self._token is None or stamp != self._stamp or expired:
            try:
                token = self._read(self.path).strip()
            except ValueError as error:  # the reader's message names the setting and path
                raise OAuthTokenError(str(error)) from None
            if not token:
                raise OAuthTokenError(f"kafka.security.sasl_oauth_token_file: {self.path} is empty")
            self.reads += 1
            self._token, self._stamp = token, stamp
            self._expires = jwt_expiry(token)
            if self._expires is not None and self._expires <= self._clock():
                _log.warning(
                    "the OAuth token in %s expired %.0f s ago; is what renews it running?",
                    self.path,
                    self._clock() - self._expires,
                )
        return self._token

    def extensions(self) -> dict[str, str]:
        """SASL extensions sent with the token (RFC 7628 §3.1), e.g. Confluent Cloud's
        `logicalCluster` and `identityPoolId`."""
        return dict(self._extensions)


class EndpointTokenProvider(AbstractTokenProvider):  # type: ignore[misc]
    """Client-credentials tokens from an OAuth 2.0 token endpoint, renewed before expiry."""

    def __init__(
        self,
        url: str,
        client_id: str,
        client_secret: Callable[[], str],
        *,
        scope: str | None = None,
        extensions: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``client_secret`` gives the secret when a token is fetched (read from its file
        then, so that a rotated secret is used at the next fetch); ``extensions`` are sent
        with each token."""
        self.url = url
        self._extensions = dict(extensions or {})
        self.client_id = client_id
        self._secret = client_secret
        self.scope = scope
        self.timeout = timeout
        self._clock = clock
        self._token: str | None = None
        self._renew_at = 0.0
        self._expires = 0.0
        self._lock = asyncio.Lock()

    async def token(self) -> str:
        async with self._lock:
            now = self._clock()
            if self._token is not None and now < self._renew_at:
                return self._token
            try:
                await self._fetch()
            except OAuthTokenError as error:
                if error.refused or self._token is None or self._expires <= now:
                    raise
                _log.warning("%s; using the current token until it expires", error)
            assert self._token is not None
            return self._token

    def extensions(self) -> dict[str, str]:
        """SASL extensions sent with the token (RFC 7628 §3.1)."""
        return dict(self._extensions)

    async def _fetch(self) -> None:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        # client_secret_basic: each form-encoded, then HTTP Basic (RFC 6749 §2.3.1)
        pair = f"{quote_plus(self.client_id)}:{quote_plus(self._secret())}"
        auth = {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
        where = f"the OAuth token endpoint {self.url}"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as http,
                http.post(self.url, data=form, headers=auth) as response,
            ):
                status = response.status
                body = await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            raise OAuthTokenError(f"{where} did not answer ({type(error).__name__})") from None
        answer = _json_object(body)
        if status != 200:
            code = answer.get("error") if isinstance(answer.get("error"), str) else None
            refused = status in (400, 401, 403) and code in (
                None,
                "invalid_client",
                "unauthorized_client",
                "invalid_scope",
                "invalid_grant",
            )
            what = f"HTTP {status}" + (f", {code}" if code else "")
            raise OAuthTokenError(
                f"{where} refused client {self.client_id!r} ({what}); check"
                " kafka.security.sasl_oauth_client_id and its secret",
                refused=refused,
            )
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise OAuthTokenError(f"{where} answered without an access_token")
        now = self._clock()
        lifetime = answer.get("expires_in")
        if not isinstance(lifetime, int | float) or isinstance(lifetime, bool) or lifetime <= 0:
            exp = jwt_expiry(token)
            lifetime = exp - now if exp is not None else DEFAULT_LIFETIME
        self._token, self._expires = token, now + lifetime
        self._renew_at = now + REFRESH_AT * lifetime
        _log.info(
            "fetched an OAuth token for client %r from %s, valid for %.0f s",
            self.client_id,
            self.url,
            lifetime,
        )


def _json_object(body: bytes) -> dict[str, object]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
