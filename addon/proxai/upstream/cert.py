"""A throw-away certificate authority and server certificate for the TLS fake upstream.

The fake upstream speaks HTTPS (and HTTP/2 via ALPN). At start the server makes a fresh CA
and a leaf for ``localhost`` / ``127.0.0.1`` / ``::1`` signed by it, written to a temporary
directory; clients trust ``ca.pem`` (e.g. ``httpx.Client(verify=up.ca_path)`` or mitmdump's
``ssl_verify_upstream_trusted_ca``). EC P-256 keys keep generation fast.

Rule: docs/design/upstream.md ("It is a real server"): the stream carrier is tested over the
transports it meets in production; this gives it TLS and ALPN h2.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True, slots=True)
class CertFiles:
    ca_path: Path  # the CA certificate clients trust
    cert_path: Path  # server certificate chain (leaf + CA)
    key_path: Path  # server private key


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certs(directory: Path, host: str = "127.0.0.1") -> CertFiles:
    """Create ``ca.pem``, ``server.pem`` (leaf + CA) and ``server.key`` in ``directory``."""
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("ProxAI fake upstream CA")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for ip in {"127.0.0.1", "::1", host}:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(ip)))
        except ValueError:
            names.append(x509.DNSName(ip))
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    files = CertFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    files.ca_path.write_bytes(ca.public_bytes(pem))
    files.cert_path.write_bytes(leaf.public_bytes(pem) + ca.public_bytes(pem))
    files.key_path.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return files
