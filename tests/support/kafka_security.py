"""TLS and SASL listeners for the test broker: certificates made here, users known here.

`KafkaBroker(..., secure=True)` listens, besides PLAINTEXT, on `SSL` (TLS only),
`SASL_PLAINTEXT` and `SASL_SSL` (SASL PLAIN and SCRAM-SHA-512 on both). The certificates are
made with the JDK's `keytool` (the broker needs Java anyway): a CA, and a broker key pair
for `localhost` and `127.0.0.1` signed by it, in a PKCS12 keystore; clients trust the CA's
PEM file. SCRAM credentials are written into the storage when it is formatted (KRaft keeps
them in the metadata log); PLAIN users are listed in the listeners' JAAS configuration.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PROTOCOLS", "USERS", "TlsFiles", "make_tls", "scram_format_args", "secure_config"]

PROTOCOLS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""The secured listeners, named by their security protocol."""

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


def _keytool(*args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["keytool", *args], input=stdin, capture_output=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def make_tls(directory: Path) -> TlsFiles:
    """A CA and a broker certificate for localhost / 127.0.0.1 signed by it."""
    directory.mkdir(parents=True, exist_ok=True)
    password = secrets.token_hex(12)
    ca, broker = directory / "ca.p12", directory / "broker.p12"
    common = ["-storetype", "PKCS12", "-storepass", password, "-keypass", password]
    key = ["-keyalg", "RSA", "-keysize", "2048", "-validity", "2"]
    _keytool("-genkeypair", "-alias", "ca", "-dname", "CN=ragstream test CA", "-ext", "bc:c",
             "-keystore", str(ca), *common, *key)  # fmt: skip
    _keytool("-genkeypair", "-alias", "broker", "-dname", "CN=localhost",
             "-keystore", str(broker), *common, *key)  # fmt: skip
    request = _keytool("-certreq", "-alias", "broker", "-keystore", str(broker), *common)
    signed = _keytool(
        "-gencert", "-alias", "ca", "-keystore", str(ca), *common, "-rfc", "-validity", "2",
        "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-ext", "EKU=serverAuth", stdin=request,
    )  # fmt: skip
    ca_pem = directory / "ca.pem"
    ca_pem.write_bytes(
        _keytool("-exportcert", "-alias", "ca", "-keystore", str(ca), *common, "-rfc")
    )
    _keytool("-importcert", "-alias", "ca", "-file", str(ca_pem), "-noprompt",
             "-keystore", str(broker), *common)  # fmt: skip
    (directory / "broker.pem").write_bytes(signed)
    _keytool("-importcert", "-alias", "broker", "-file", str(directory / "broker.pem"),
             "-keystore", str(broker), *common)  # fmt: skip
    return TlsFiles(ca_pem, broker, password)


def _jaas(mechanism: str) -> str:
    if mechanism == "PLAIN":
        users = " ".join(f'user_{name}="{password}"' for name, password in USERS.items())
        return f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
    return "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def secure_config(ports: Mapping[str, int], tls: TlsFiles) -> dict[str, str]:
    """server.properties entries for the secured listeners (added to the PLAINTEXT and
    CONTROLLER ones)."""
    config = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(tls.keystore),
        "ssl.keystore.password": tls.password,
        "ssl.key.password": tls.password,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    }
    for protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        for mechanism in ("PLAIN", "SCRAM-SHA-512"):
            key = f"listener.name.{protocol.lower()}.{mechanism.lower()}.sasl.jaas.config"
            config[key] = _jaas(mechanism)
    return config


def scram_format_args() -> list[str]:
    """`StorageTool format` arguments that store the SCRAM-SHA-512 credentials."""
    args: list[str] = []
    for name, password in USERS.items():
        args += ["--add-scram", f"SCRAM-SHA-512=[name={name},password={password}]"]
    return args
