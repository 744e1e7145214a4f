"""Why a broker refuses this client, asked with one probe connection after a failed start.

aiokafka reports a refused password, an untrusted certificate and an unreachable broker
alike, as a cluster it cannot bootstrap from. The first may not be retried (it cannot
succeed), the last must be. One connection made the way the clients make theirs
(`aiokafka.conn.create_conn`), and, on TLS, one bare TLS connection that waits for the
broker's alert (a listener that requires a client certificate closes the connection of a
client without one: aiokafka sees only the close), tell them apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from typing import Any

from aiokafka.conn import create_conn
from aiokafka.errors import KafkaError, SaslAuthenticationFailed, UnsupportedSaslMechanismError

from ragstream.sources.kafka_oauth import OAuthTokenError

__all__ = ["refused"]

_CONN_OPTIONS = frozenset(
    {
        "client_id",
        "security_protocol",
        "ssl_context",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
        "sasl_oauth_token_provider",
    }
)
"""The client options that a single probe connection (`create_conn`) takes."""


async def refused(host: str, port: int, client_options: Mapping[str, Any]) -> str | None:
    """What the broker at `host:port` refused of this client's credentials or certificate
    (a message for a person, naming no secret), or None when it did not refuse them."""
    options = {k: v for k, v in client_options.items() if k in _CONN_OPTIONS}
    where = f"Kafka at {host}:{port}"
    try:
        conn = await create_conn(host, port, request_timeout_ms=10_000, **options)
    except (SaslAuthenticationFailed, UnsupportedSaslMechanismError) as error:
        mechanism = options.get("sasl_mechanism")
        what = f"the SASL credentials of user {options.get('sasl_plain_username')!r}"
        if mechanism == "OAUTHBEARER":
            what = "the OAuth token"
        return f"{where} refused {what} (mechanism {mechanism}): {error}; check kafka.security"
    except OAuthTokenError as error:
        return str(error) if error.refused else None
    except ssl.SSLCertVerificationError as error:
        return _untrusted(where, host, error)
    except (OSError, KafkaError, TimeoutError, ValueError):
        context = options.get("ssl_context")
        if not isinstance(context, ssl.SSLContext):
            return None
        alert = await _tls_alert(host, port, context)
        if alert is None or "CERTIFICATE" not in alert:
            return None
        return (
            f"{where} refused this client's certificate ({alert}); check"
            " kafka.security.ssl_certfile and ssl_keyfile (the listener requires one)"
        )
    conn.close()
    return None


def _untrusted(where: str, host: str, error: ssl.SSLCertVerificationError) -> str:
    message = error.verify_message or str(error)
    if "mismatch" in message:  # a host name or an IP address the certificate does not name
        return (
            f"{where} presented a certificate that does not name {host} ({message}); connect"
            " by a name the certificate has, or set kafka.security.ssl_check_hostname: false"
        )
    return (
        f"{where} presented a certificate that is not trusted ({message});"
        " check kafka.security.ssl_cafile"
    )


async def _tls_alert(host: str, port: int, context: ssl.SSLContext) -> str | None:
    """The TLS alert the broker sends this client once the handshake is done (TLS 1.3
    checks the client's certificate then), or None when it sends none within 5 s."""
    writer = None
    try:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection(host, port, ssl=context)
            await reader.read(1)
    except ssl.SSLError as error:
        return error.reason or str(error)
    except (OSError, TimeoutError):
        return None
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError, ssl.SSLError):
                await writer.wait_closed()
    return None
