"""A throwaway certificate authority for the TLS tests: a CA, a server certificate for
127.0.0.1 and a client certificate, both signed by it, as PEM files. cryptography comes with
the official SDK (a dev dependency), through pyjwt[crypto]; it is imported when a ``Pki`` is
made."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path
from typing import Any

from tests.servers.http_fault_server import HOST


class Pki:
    """PEM files: a CA, a server certificate for 127.0.0.1 and a client certificate, both
    signed by it, and their keys."""

    def __init__(self, directory: Path) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        now = datetime.datetime.now(datetime.UTC)

        def issue(subject: str, key: Any, issuer_key: Any, issuer: Any, usage: Any) -> Any:
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
            ca = usage is None
            builder = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(issuer or name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
                .add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                    False,
                )
            )
            if ca:
                signing = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
                builder = builder.add_extension(signing, critical=True)
            else:
                builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), False)
                if usage == ExtendedKeyUsageOID.SERVER_AUTH:
                    address = x509.IPAddress(ipaddress.ip_address(HOST))
                    builder = builder.add_extension(x509.SubjectAlternativeName([address]), False)
            return builder.sign(issuer_key, hashes.SHA256())

        def write(name: str, data: bytes) -> Path:
            path = directory / name
            path.write_bytes(data)
            return path

        def key_pem(key: Any) -> bytes:
            return bytes(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )

        pem = serialization.Encoding.PEM
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = issue("throwaway test CA", ca_key, ca_key, None, None)
        server_key = ec.generate_private_key(ec.SECP256R1())
        server = issue(HOST, server_key, ca_key, ca.subject, ExtendedKeyUsageOID.SERVER_AUTH)
        client_key = ec.generate_private_key(ec.SECP256R1())
        client = issue("a client", client_key, ca_key, ca.subject, ExtendedKeyUsageOID.CLIENT_AUTH)
        self.ca = write("ca.pem", ca.public_bytes(pem))
        self.server_cert = write("server.pem", server.public_bytes(pem))
        self.server_key = write("server.key", key_pem(server_key))
        self.client_cert = write("client.pem", client.public_bytes(pem))
        self.client_key = write("client.key", key_pem(client_key))
        self.client_both = write("client-both.pem", client.public_bytes(pem) + key_pem(client_key))

    def server_context(self, *, require_client_cert: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.server_cert, self.server_key)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca)
        return context
