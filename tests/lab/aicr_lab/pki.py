"""Throw-away certificate authorities and certificates for the lab (PyPI ``cryptography``).

One place makes every key and certificate the lab uses: the control plane's CA, serving and
client certificates, the service-account signing key, the fabric simulator's CA, and the odd
certificates tests need on purpose (an expired client certificate, a CA nobody trusts).
Keys are EC P-256 (fast to generate, accepted by Go, Python and OpenSSL alike); files holding a
private key are written 0600.
"""

import datetime
import hashlib
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)
BACKDATE = datetime.timedelta(minutes=5)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _name(common_name, organizations=()):
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _write(path, data, private=False):
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(path, flags, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def cert_pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


class Authority:
    """A CA that signs serving and client certificates; ``cert_path`` is its PEM file."""

    def __init__(self, directory, name, common_name, load=False):
        self.directory = str(directory)
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        self.cert_path = os.path.join(self.directory, "%s.crt" % name)
        self.key_path = os.path.join(self.directory, "%s.key" % name)
        if load:
            with open(self.key_path, "rb") as handle:
                self.key = serialization.load_pem_private_key(handle.read(), password=None)
            with open(self.cert_path, "rb") as handle:
                self.cert = x509.load_pem_x509_certificate(handle.read())
            return
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(_name(common_name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        _write(self.cert_path, cert_pem(self.cert))
        _write(self.key_path, key_pem(self.key), private=True)

    @classmethod
    def load(cls, directory, name="ca"):
        """The CA written earlier into ``directory`` (to sign more certificates for a running lab)."""
        return cls(directory, name, None, load=True)

    # pylint: disable=too-many-arguments
    def issue(self, name, common_name, organizations=(), server_names=(), client=False, server=False,
              not_before=None, not_after=None):
        """Sign a certificate; write ``<name>.crt`` and ``<name>.key``; return (cert path, key path).

        ``server_names`` are DNS names or IP addresses (SANs); ``not_before``/``not_after`` override the
        validity (an expired certificate for a test).
        """
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        usages = []
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before or now - BACKDATE)
            .not_valid_after(not_after or now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if server_names:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(n) for n in server_names]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        cert_path = _write(os.path.join(self.directory, "%s.crt" % name), cert_pem(cert))
        key_path = _write(os.path.join(self.directory, "%s.key" % name), key_pem(key), private=True)
        return cert_path, key_path


def fingerprint(cert_path):
    """SHA-256 of a PEM certificate's DER form (hex), as TLS peers see it."""
    with open(cert_path, "rb") as handle:
        cert = x509.load_pem_x509_certificate(handle.read())
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def _san(name):
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def service_account_keys(directory):
    """The RSA key pair that signs and verifies service-account tokens; return (private, public) paths."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = _write(os.path.join(str(directory), "sa.key"), key_pem(key), private=True)
    public = _write(os.path.join(str(directory), "sa.pub"), key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def generate_server_bundle(directory, organization="aicr lab"):
    """A CA and one 127.0.0.1/localhost serving certificate: ``{"ca", "cert", "key"}`` paths (the fabric simulator's)."""
    authority = Authority(directory, "ca", "%s CA" % organization)
    cert, key = authority.issue("server", "127.0.0.1", server_names=("127.0.0.1", "localhost"), server=True)
    return {"ca": authority.cert_path, "cert": cert, "key": key}
