"""Real certificates for the tests' TLS, made when asked (``cryptography``): a CA, a server
certificate for 127.0.0.1 signed by it, a client certificate it signed, and a client certificate
a CA nobody trusts signed (a stranger's). PEM files in a folder of the caller's."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    second_cert: Path
    """Another client's certificate, the same CA's."""
    second_key: Path
    stranger_cert: Path
    stranger_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    by_name, by_key = issuer if issuer is not None else (_name(subject), key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(by_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    return builder.sign(by_key, hashes.SHA256())


def make_pki(folder: Path) -> Pki:
    """A CA, a server certificate and two clients' certificates it signed, and a stranger's."""
    pem = serialization.Encoding.PEM
    ca_key, other_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = _issue("toolnexus test CA", ca_key, None, ca=True)
    other = _issue("nobody's CA", other_key, None, ca=True)
    out: dict[str, Path] = {"ca": folder / "ca.pem"}
    out["ca"].write_bytes(ca.public_bytes(pem))
    for who, issuer, extra in (
        ("server", (ca.subject, ca_key), {"server": True}),
        ("client", (ca.subject, ca_key), {}),
        ("second", (ca.subject, ca_key), {}),
        ("stranger", (other.subject, other_key), {}),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _issue(f"{who}.toolnexus.test", key, issuer, **extra)
        out[f"{who}_cert"] = folder / f"{who}.pem"
        out[f"{who}_cert"].write_bytes(cert.public_bytes(pem))
        out[f"{who}_key"] = _write_key(key, folder / f"{who}-key.pem")
    return Pki(**out)
