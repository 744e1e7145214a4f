"""Secrets as files: the Kafka SASL password and the judge's API key, e.g. mounted from a
Kubernetes secret. Read only when the clients are built; never printed."""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config import KafkaSecurity, SecretFileError, load_settings
from ragstream.config.judging import OpenAISettings
from ragstream.sources.kafka_oauth import EndpointTokenProvider, FileTokenProvider
from ragstream.wiring.kafka import client_security

SECRET = "s3cr3t-from-the-file"


def _sasl(**extra: object) -> dict[str, object]:
    return {
        "protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "ragstream",
        **extra,
    }


@pytest.mark.parametrize(
    ("content", "password"),
    [
        (f"{SECRET}\n", SECRET),  # echo and editors end the file with a newline
        (f"{SECRET}\r\n", SECRET),
        (SECRET, SECRET),  # kubectl create secret --from-literal: no newline
        (f" {SECRET} \n", f" {SECRET} "),  # other whitespace may belong to the password
    ],
)
def test_the_sasl_password_is_read_from_its_file_by_the_kafka_clients(
    tmp_path: Path, content: str, password: str
) -> None:
    path = tmp_path / "kafka-sasl-password"
    path.write_text(content, encoding="utf-8", newline="")
    security = KafkaSecurity.model_validate(_sasl(sasl_password_file=str(path)))
    options = client_security(security)
    assert options["sasl_plain_password"] == password
    assert options["sasl_plain_username"] == "ragstream"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"


def test_a_password_value_still_works() -> None:
    security = KafkaSecurity.model_validate(_sasl(sasl_password="from-env"))
    assert client_security(security)["sasl_plain_password"] == "from-env"


def test_the_password_and_its_file_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="give sasl_password or sasl_password_file, not both"):
        KafkaSecurity.model_validate(
            _sasl(sasl_password="x", sasl_password_file=str(tmp_path / "p"))
        )


def test_sasl_without_a_password_or_file_names_both() -> None:
    with pytest.raises(ValueError, match=r"sasl_password \(or sasl_password_file\)"):
        KafkaSecurity.model_validate(_sasl())


def test_check_config_shows_the_path_and_never_reads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kafka-sasl-password"
    path.write_text(SECRET + "\n")
    config = tmp_path / "ragstream.yaml"
    config.write_text(
        "kafka:\n  security:\n    protocol: SASL_SSL\n    sasl_mechanism: PLAIN\n"
        f"    sasl_username: svc\n    sasl_password_file: {path}\n"
    )
    result = CliRunner().invoke(main, ["check-config", "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert f"sasl_password_file: {path}" in result.output
    assert SECRET not in result.output
    settings = load_settings(config)
    assert SECRET not in repr(settings)
    assert SECRET not in settings.model_dump_json()
    path.unlink()  # a file that is not there yet (mounted later) does not fail the check
    assert CliRunner().invoke(main, ["check-config", "--config", str(config)]).exit_code == 0


@pytest.mark.parametrize("problem", ["missing", "empty", "directory"])
def test_run_with_an_unreadable_password_file_stops_with_a_clear_error(
    tmp_path: Path, problem: str
) -> None:
    path = tmp_path / "kafka-sasl-password"
    if problem == "empty":
        path.write_text("\n")
    elif problem == "directory":
        path.mkdir()
    args = [
        "run",
        "--bootstrap-servers",
        "127.0.0.1:1",  # never reached: the secret is read before any client starts
        "--set",
        "kafka.security.protocol=SASL_PLAINTEXT",
        "--set",
        "kafka.security.sasl_mechanism=PLAIN",
        "--set",
        "kafka.security.sasl_username=svc",
        "--set",
        f"kafka.security.sasl_password_file={path}",
        "--port",
        "0",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"kafka.security.sasl_password_file: {path}" in result.output or (
        f"kafka.security.sasl_password_file: cannot read {path}" in result.output
    )
    expected = {"missing": "No such file", "empty": "is empty", "directory": "Is a directory"}
    assert expected[problem] in result.output


def test_a_missing_judge_key_file_is_a_clear_error(tmp_path: Path) -> None:
    settings = OpenAISettings.model_validate({"api_key_file": str(tmp_path / "judge-api-key")})
    with pytest.raises(SecretFileError, match=r"judge\.openai\.api_key_file: cannot read .*"):
        settings.resolve_api_key()


# -- OAUTHBEARER, client certificates, host names ------------------------------------------------


def _oauth(**extra: object) -> dict[str, object]:
    return {"protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", **extra}


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({}, "needs sasl_oauth_token_file or sasl_oauth_token_endpoint"),
        (
            {"sasl_oauth_token_file": "/t", "sasl_oauth_token_endpoint": "https://idp/token"},
            "needs sasl_oauth_token_file or sasl_oauth_token_endpoint",
        ),
        ({"sasl_oauth_token_endpoint": "https://idp/token"}, "needs sasl_oauth_client_id"),
        (
            {"sasl_oauth_token_endpoint": "idp/token", "sasl_oauth_client_id": "a"},
            "is not an http(s) URL",
        ),
        (
            {
                "sasl_oauth_token_endpoint": "https://idp/token",
                "sasl_oauth_client_id": "a",
                "sasl_oauth_client_secret": "x",
                "sasl_oauth_client_secret_file": "/s",
            },
            "give sasl_oauth_client_secret or sasl_oauth_client_secret_file, not both",
        ),
    ],
)
def test_oauthbearer_settings_that_cannot_work_are_refused(
    extra: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        KafkaSecurity.model_validate(_oauth(**extra))


def test_oauthbearer_needs_no_user_and_gets_a_token_provider(tmp_path: Path) -> None:
    token = tmp_path / "token"
    by_file = client_security(KafkaSecurity.model_validate(_oauth(sasl_oauth_token_file=token)))
    assert isinstance(by_file["sasl_oauth_token_provider"], FileTokenProvider)
    assert "sasl_plain_password" not in by_file
    secret = tmp_path / "client-secret"
    secret.write_text(SECRET + "\n")
    by_endpoint = client_security(
        KafkaSecurity.model_validate(
            _oauth(
                sasl_oauth_token_endpoint="https://idp.example/oauth2/token",
                sasl_oauth_client_id="ragstream",
                sasl_oauth_client_secret_file=str(secret),
                ssl_check_hostname=True,
            )
        )
    )
    provider = by_endpoint["sasl_oauth_token_provider"]
    assert isinstance(provider, EndpointTokenProvider)
    assert provider._secret() == SECRET  # read from its file at each fetch
    secret.unlink()  # a secret file that cannot be read fails when the clients are built
    with pytest.raises(SecretFileError, match="sasl_oauth_client_secret_file: cannot read"):
        client_security(
            KafkaSecurity.model_validate(
                _oauth(
                    sasl_oauth_token_endpoint="https://idp.example/oauth2/token",
                    sasl_oauth_client_id="ragstream",
                    sasl_oauth_client_secret_file=str(secret),
                )
            )
        )


def test_tls_checks_host_names_unless_turned_off() -> None:
    on = client_security(KafkaSecurity.model_validate({"protocol": "SSL"}))["ssl_context"]
    assert on.check_hostname
    assert on.verify_mode == ssl.CERT_REQUIRED
    off = client_security(
        KafkaSecurity.model_validate({"protocol": "SSL", "ssl_check_hostname": False})
    )["ssl_context"]
    assert not off.check_hostname
    assert off.verify_mode == ssl.CERT_REQUIRED  # the certificate is still verified


@pytest.mark.parametrize("missing", ["ssl_cafile", "ssl_certfile", "ssl_keyfile"])
def test_a_tls_file_that_is_not_there_is_a_clear_error(tmp_path: Path, missing: str) -> None:
    files = {k: tmp_path / k for k in ("ssl_cafile", "ssl_certfile", "ssl_keyfile")}
    for name, path in files.items():
        if name != missing:
            path.write_text("not a certificate")
    security = KafkaSecurity.model_validate({"protocol": "SSL", **files})
    with pytest.raises(SecretFileError, match=f"kafka.security.{missing}: .* is not a readable"):
        client_security(security)


def test_a_client_key_password_from_a_file_that_cannot_be_read_is_a_clear_error(
    tmp_path: Path,
) -> None:
    security = KafkaSecurity.model_validate(
        {"protocol": "SSL", "ssl_password_file": str(tmp_path / "key-password")}
    )
    with pytest.raises(SecretFileError, match="ssl_password_file: cannot read"):
        client_security(security)


def test_check_config_masks_the_oauth_client_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSTREAM_KAFKA__SECURITY__SASL_OAUTH_CLIENT_SECRET", SECRET)
    args = [
        "check-config",
        *("--set", "kafka.security.protocol=SASL_SSL"),
        *("--set", "kafka.security.sasl_mechanism=OAUTHBEARER"),
        *("--set", "kafka.security.sasl_oauth_token_endpoint=https://idp.example/token"),
        *("--set", "kafka.security.sasl_oauth_client_id=ragstream"),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "sasl_oauth_client_secret: '**********'" in result.output
    assert SECRET not in result.output
