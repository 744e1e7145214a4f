"""TLS and SASL listeners for the test broker: certificates made here, users known here.

`KafkaBroker(..., secure=True)` listens, besides PLAINTEXT, on `SSL` (TLS only),
`SASL_PLAINTEXT` and `SASL_SSL` (SASL PLAIN, SCRAM-SHA-512 and OAUTHBEARER on both), `MTLS`
(TLS that requires a client certificate signed by the CA) and `OTHER_NAME` (TLS with a
certificate for `broker.invalid` only: a host name check of 127.0.0.1 fails there). The
certificates are made with the JDK's `keytool` (the broker needs Java anyway): a CA, and a
broker key pair for `localhost` and `127.0.0.1` signed by it, in a PKCS12 keystore; clients
trust the CA's PEM file. The client certificate is made with `cryptography`, as PEM files
the way a Kubernetes TLS Secret holds them (its key encrypted with a password). SCRAM
credentials are written into the storage when it is formatted (KRaft keeps them in the
metadata log); PLAIN users are listed in the listeners' JAAS configuration. OAUTHBEARER is
Kafka's default for it: unsecured JWS tokens (`unsecured_jws`), checked for their `exp`
and `sub` by `OAuthBearerUnsecuredValidatorCallbackHandler`; its connections must
authenticate again every `REAUTH_MS` (the broker closes them otherwise), so that a client
needs a fresh token to go on.
"""

from __future__ import annotations

import base64
import datetime
import json
import secrets
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "LISTENERS",
    "PROTOCOLS",
    "REAUTH_MS",
    "USERS",
    "TlsFiles",
    "make_tls",
    "scram_format_args",
    "secure_config",
    "unsecured_jws",
]

LISTENERS: Mapping[str, str] = {
    "SSL": "SSL",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
    "MTLS": "SSL",
    "OTHER_NAME": "SSL",
}
"""The secured listeners and their security protocols."""

PROTOCOLS = tuple(LISTENERS)
"""The secured listeners' names (those of the first three are their security protocols)."""

REAUTH_MS = 3000
"""How long an OAUTHBEARER connection lives before it must authenticate again."""

USERS: Mapping[str, str] = {"ragstream": "s3cret-" + secrets.token_hex(8)}
"""SASL users and their passwords (new for every test session)."""


@dataclass(frozen=True)
class TlsFiles:
    """What `make_tls` wrote."""

    ca_pem: Path
    """The CA certificate, PEM: what clients trust."""
    keystore: Path
    """The broker's PKCS12 keystore (its key, its certificate, the CA's)."""
    password: str
    """The keystore's password."""
    truststore: Path
    """The CA certificate alone, PKCS12: what the MTLS listener trusts of clients."""
    other_keystore: Path
    """A broker key pair for `broker.invalid` only, signed by the CA (`OTHER_NAME`)."""
    client_cert: Path
    """The client's certificate, PEM (a TLS Secret's `tls.crt`)."""
    client_key: Path
    """The client's private key, PEM, encrypted with `client_key_password`."""
    client_key_password: str


def _keytool(*args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["keytool", *args], input=stdin, capture_output=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def make_tls(directory: Path) -> TlsFiles:
    """A CA and a broker certificate for localhost / 127.0.0.1 signed by it."""
    directory.mkdir(parents=True, exist_ok=True)
    password = secrets.token_hex(12)
    ca = directory / "ca.p12"
    common = ["-storetype", "PKCS12", "-storepass", password, "-keypass", password]
    key = ["-keyalg", "RSA", "-keysize", "2048", "-validity", "2"]
    _keytool("-genkeypair", "-alias", "ca", "-dname", "CN=ragstream test CA", "-ext", "bc:c",
             "-keystore", str(ca), *common, *key)  # fmt: skip
    ca_pem = directory / "ca.pem"
    ca_pem.write_bytes(
        _keytool("-exportcert", "-alias", "ca", "-keystore", str(ca), *common, "-rfc")
    )
    broker = _broker_keystore(directory, "broker", "dns:localhost,ip:127.0.0.1", password)
    other = _broker_keystore(directory, "other", "dns:broker.invalid", password)
    truststore = directory / "trust.p12"
    _keytool("-importcert", "-alias", "ca", "-file", str(ca_pem), "-noprompt",
             "-keystore", str(truststore), *common)  # fmt: skip
    key_password = secrets.token_hex(8)
    cert, private = _client_certificate(ca, password, key_password)
    (directory / "tls.crt").write_bytes(cert)
    (directory / "tls.key").write_bytes(private)
    return TlsFiles(
        ca_pem, broker, password, truststore, other,
        directory / "tls.crt", directory / "tls.key", key_password,
    )  # fmt: skip


def _broker_keystore(directory: Path, name: str, san: str, password: str) -> Path:
    """A broker key pair for the names of `san`, signed by the CA, with the CA's
    certificate, in `<name>.p12`."""
    ca, store, pem = directory / "ca.p12", directory / f"{name}.p12", directory / f"{name}.pem"
    common = ["-storetype", "PKCS12", "-storepass", password, "-keypass", password]
    key = ["-keyalg", "RSA", "-keysize", "2048", "-validity", "2"]
    _keytool("-genkeypair", "-alias", "broker", "-dname", "CN=localhost",
             "-keystore", str(store), *common, *key)  # fmt: skip
    request = _keytool("-certreq", "-alias", "broker", "-keystore", str(store), *common)
    pem.write_bytes(
        _keytool(
            "-gencert", "-alias", "ca", "-keystore", str(ca), *common, "-rfc", "-validity", "2",
            "-ext", f"SAN={san}", "-ext", "EKU=serverAuth", stdin=request,
        )
    )  # fmt: skip
    _keytool("-importcert", "-alias", "ca", "-file", str(directory / "ca.pem"), "-noprompt",
             "-keystore", str(store), *common)  # fmt: skip
    _keytool("-importcert", "-alias", "broker", "-file", str(pem),
             "-keystore", str(store), *common)  # fmt: skip
    return store


def _client_certificate(ca: Path, password: str, key_password: str) -> tuple[bytes, bytes]:
    """A client certificate signed by the CA of `ca` (PKCS12) and its private key
    (encrypted with `key_password`), both PEM."""
    ca_key, ca_cert, _ = pkcs12.load_key_and_certificates(ca.read_bytes(), password.encode())
    assert isinstance(ca_key, rsa.RSAPrivateKey)
    assert ca_cert is not None
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ragstream-agent")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(key_password.encode()),
    )
    return cert.public_bytes(serialization.Encoding.PEM), private


def _jaas(mechanism: str) -> str:
    if mechanism == "PLAIN":
        users = " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
        return f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
    if mechanism == "OAUTHBEARER":
        return (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
            ' unsecuredLoginStringClaim_sub="broker";'
        )
    return "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def unsecured_jws(subject: str, lifetime: float, **claims: object) -> str:
    """An unsecured JWS (`alg: none`, RFC 7515 appendix A.5) as Kafka's unsecured
    OAUTHBEARER validator accepts it: `sub`, `iat`, and `exp` `lifetime` seconds from now."""

    def part(value: Mapping[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = time.time()
    body = {"sub": subject, "iat": int(now), "exp": now + lifetime, **claims}
    return f"{part({'alg': 'none'})}.{part(body)}."


def secure_config(ports: Mapping[str, int], tls: TlsFiles) -> dict[str, str]:
    """server.properties entries for the secured listeners (added to the PLAINTEXT and
    CONTROLLER ones)."""
    config = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(tls.keystore),
        "ssl.keystore.password": tls.password,
        "ssl.key.password": tls.password,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PKCS12",
        "listener.name.mtls.ssl.truststore.location": str(tls.truststore),
        "listener.name.mtls.ssl.truststore.password": tls.password,
        "listener.name.other_name.ssl.keystore.type": "PKCS12",
        "listener.name.other_name.ssl.keystore.location": str(tls.other_keystore),
        "listener.name.other_name.ssl.keystore.password": tls.password,
        "listener.name.other_name.ssl.key.password": tls.password,
    }
    for protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        for mechanism in ("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"):
            prefix = f"listener.name.{protocol.lower()}.{mechanism.lower()}"
            config[f"{prefix}.sasl.jaas.config"] = _jaas(mechanism)
        config[f"listener.name.{protocol.lower()}.oauthbearer.connections.max.reauth.ms"] = str(
            REAUTH_MS
        )
    return config


def scram_format_args() -> list[str]:
    """`StorageTool format` arguments that store the SCRAM-SHA-512 credentials."""
    args: list[str] = []
    for name, password in USERS.items():
        args += ["--add-scram", f"SCRAM-SHA-512=[name={name},password={password}]"]
    return args
