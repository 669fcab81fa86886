"""A throw-away certificate authority for tests of TLS on loopback (``cryptography``, already a dependency).

``make_ca(dir)`` writes ``ca.pem`` (what a client is told to trust, e.g.
``SSL_CERT_FILE``) and returns a :class:`TestCA` that issues server
certificates for any names; ``server_context(names)`` is a server-side
``ssl.SSLContext`` holding one, for ``git_sluice.double.serve(..., tls=…)``
or any loopback server. Nothing here touches the system's trust store.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _valid() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.timezone.utc)
    return now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)


@dataclass
class TestCA:
    __test__ = False  # not a test class, for pytest

    folder: Path
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def pem(self) -> Path:
        return self.folder / "ca.pem"

    def issue(self, names: list[str], stem: str = "server") -> tuple[Path, Path]:
        """(certificate chain file, key file) of a server certificate for ``names`` (DNS names or IP literals)."""
        key = ec.generate_private_key(ec.SECP256R1())
        alt: list[x509.GeneralName] = []
        for name in names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alt.append(x509.DNSName(name))
        start, end = _valid()
        cert = (
            x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(self.cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        cert_file, key_file = self.folder / f"{stem}.pem", self.folder / f"{stem}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        return cert_file, key_file

    def server_context_signed_by_itself(self, names: list[str]) -> ssl.SSLContext:
        """The CA's own certificate, with ``names``, serving: self-signed."""
        start, end = _valid()
        alt = [x509.DNSName(n) for n in names]
        cert = (
            x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(_name(names[0]))
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        cert_file, key_file = self.folder / "self.pem", self.folder / "self.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                    serialization.NoEncryption()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        return context

    def server_context(self, names: list[str]) -> ssl.SSLContext:
        cert_file, key_file = self.issue(names)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        return context


def make_ca(folder: Path) -> TestCA:
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    start, end = _valid()
    cert = (
        x509.CertificateBuilder().subject_name(_name("git-sluice test CA")).issuer_name(_name("git-sluice test CA"))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    ca = TestCA(folder, key, cert)
    ca.pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return ca


def self_signed_context(folder: Path, names: list[str]) -> ssl.SSLContext:
    """A server context whose certificate signs itself (no CA at all): what a fresh appliance serves."""
    return make_ca(folder).server_context_signed_by_itself(names)
