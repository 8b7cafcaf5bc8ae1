"""Mutual TLS for a Dask cluster: certificates made by ``curator tls-certs``, checked before
connecting so that a missing, expired or foreign one is one line naming the file.

A Dask scheduler runs whatever its clients send, on every worker: on a network others can
reach, only holders of a certificate signed by the cluster's own CA may connect (mutual TLS,
``Security(require_encryption=True)``). See docs/cluster.md and docs/security.md.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from curator.base.errors import ConfigError
from curator.storage import nofollow

#: what ``curator tls-certs`` writes for a client that is not one of the nodes
CLIENT = "client"


@dataclass(frozen=True)
class TLSFiles:
    """``executor.tls`` of the pipeline YAML: the CA and this process's certificate and key."""

    ca_file: str
    cert: str
    key: str

    def security(self) -> Any:
        """A Dask ``Security`` that requires TLS on every connection and presents our cert."""
        from distributed.security import Security

        return Security(tls_ca_file=self.ca_file, tls_client_cert=self.cert,
                        tls_client_key=self.key, tls_scheduler_cert=self.cert,
                        tls_scheduler_key=self.key, tls_worker_cert=self.cert,
                        tls_worker_key=self.key, require_encryption=True)


def tls_files(cfg: dict[str, Any] | None, where: str = "executor.tls") -> TLSFiles | None:
    """The checked ``executor.tls`` files (absolute), or None when not configured."""
    if not cfg:
        return None
    missing = [k for k in ("ca_file", "cert", "key") if not cfg.get(k)]
    if missing:
        raise ConfigError(f"{where}: needs ca_file, cert and key (missing: {', '.join(missing)})")
    files = TLSFiles(*(os.path.abspath(os.path.expanduser(str(cfg[k])))
                       for k in ("ca_file", "cert", "key")))
    check_files(files, where)
    return files


#: A PEM certificate or key is a few KB; anything past this is not one (and is not read whole).
_MAX_PEM = 1 << 20


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_PEM + 1)
    except OSError as e:
        raise ConfigError(f"{what}: {path}: {e.strerror}") from None
    if len(data) > _MAX_PEM:
        raise ConfigError(f"{what}: {path}: larger than {_MAX_PEM} bytes, not a PEM file")
    return data


def _load_cert(path: str, what: str) -> Any:
    from cryptography import x509

    data = _read(path, what)
    try:
        return x509.load_pem_x509_certificate(data)
    except ValueError:
        raise ConfigError(f"{what}: {path} is not a PEM certificate") from None


def check_files(files: TLSFiles, where: str = "executor.tls") -> None:
    """One :class:`ConfigError` naming the file: missing or unreadable, not a certificate,
    expired or not yet valid, not signed by the CA, or a key that is not the certificate's."""
    now = dt.datetime.now(dt.UTC)
    ca = _load_cert(files.ca_file, f"{where}.ca_file")
    cert = _load_cert(files.cert, f"{where}.cert")
    for what, path, c in ((f"{where}.ca_file", files.ca_file, ca),
                          (f"{where}.cert", files.cert, cert)):
        if c.not_valid_after_utc < now:
            raise ConfigError(f"{what}: {path} expired on {c.not_valid_after_utc:%Y-%m-%d}; "
                              "make new certificates (curator tls-certs)")
        if c.not_valid_before_utc > now:
            raise ConfigError(f"{what}: {path} is not valid before "
                              f"{c.not_valid_before_utc:%Y-%m-%d %H:%M} UTC (check the clock)")
    try:
        cert.verify_directly_issued_by(ca)
    except Exception:  # ValueError (other issuer), InvalidSignature, TypeError (key type)
        raise ConfigError(f"{where}.cert: {files.cert} is not signed by the CA in "
                          f"{where}.ca_file ({files.ca_file})") from None
    _read(files.key, f"{where}.key")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.load_cert_chain(files.cert, files.key)
    except ssl.SSLError as e:
        raise ConfigError(f"{where}.key: {files.key} is not the key of {files.cert} "
                          f"({e.reason or e})") from None


# -- addresses -------------------------------------------------------------------------------


def scheduler_address(address: str | None, scheduler_file: str | None) -> str | None:
    """The scheduler's address, from ``address`` or the scheduler file (None if unreadable:
    Dask then says why)."""
    if address:
        return address
    try:
        with open(scheduler_file or "") as f:
            return str(json.load(f).get("address") or "") or None
    except (OSError, ValueError, AttributeError):
        return None


def is_loopback(address: str) -> bool:
    """Whether ``tcp://host:port`` names this machine's loopback interface only."""
    host = urlsplit(address if "://" in address else f"tcp://{address}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dask_config_tls() -> bool:
    """Whether Dask's own configuration (``distributed.comm.tls.*``, e.g. the
    ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE`` variable) names a CA and a client certificate."""
    import dask

    return bool(dask.config.get("distributed.comm.tls.ca-file", None)
                and dask.config.get("distributed.comm.tls.client.cert", None))


# -- curator tls-certs ---------------------------------------------------------------------------


def make_certs(out_dir: str, hosts: Sequence[str | Sequence[str]], days: int = 365) -> list[str]:
    """A CA and, signed by it, a certificate and key per host plus one for a client that is
    none of them. A host is a name or a list of its names and addresses: its certificate
    carries every one as a subject alternative name (a DNS name, or an IP address) and is
    named after the first, since a Redis Cluster announces its nodes by address while users
    name them by host. Keys are written 0600 in a 0700 folder; an existing CA in ``out_dir``
    is reused, so nodes can be added later. Returns the paths written."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    os.makedirs(out_dir, mode=0o700, exist_ok=True)
    os.chmod(out_dir, 0o700)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    written: list[str] = []

    def save_key(path: str, key: Any) -> None:
        with nofollow.open_file(path, "wb", perm=0o600) as f:  # a symlink there: refused
            os.fchmod(f.fileno(), 0o600)
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        written.append(path)

    def save_cert(path: str, cert: Any) -> None:
        with nofollow.open_file(path, "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        written.append(path)

    ca_path, ca_key_path = os.path.join(out_dir, "ca.pem"), os.path.join(out_dir, "ca.key")
    if os.path.exists(ca_path) != os.path.exists(ca_key_path):  # never replace half a CA
        raise ConfigError(f"{out_dir}: holds only one of ca.pem and ca.key; put the CA's key "
                          "back to add certificates, or use an empty folder for a new CA")
    if os.path.exists(ca_path):
        ca_cert = x509.load_pem_x509_certificate(_read(ca_path, "ca.pem"))
        ca_key = serialization.load_pem_private_key(_read(ca_key_path, "ca.key"), None)
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "curator cluster CA")])
        ca_cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(ca_key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now).not_valid_after(now + dt.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(
                       digital_signature=False, content_commitment=False,
                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                       key_cert_sign=True, crl_sign=True, encipher_only=False,
                       decipher_only=False), critical=True)
                   .sign(ca_key, hashes.SHA256()))
        save_key(ca_key_path, ca_key)
        save_cert(ca_path, ca_cert)
    for names in [*([h] if isinstance(h, str) else list(h) for h in hosts), [CLIENT]]:
        host = names[0]
        key = ec.generate_private_key(ec.SECP256R1())
        alt: list[Any] = []
        for name in dict.fromkeys(names):
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alt.append(x509.DNSName(name))
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
                .issuer_name(ca_cert.subject).public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now).not_valid_after(now + dt.timedelta(days=days))
                .add_extension(x509.SubjectAlternativeName(alt), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .sign(ca_key, hashes.SHA256()))
        save_key(os.path.join(out_dir, f"{host}.key"), key)
        save_cert(os.path.join(out_dir, f"{host}.pem"), cert)
    return written
