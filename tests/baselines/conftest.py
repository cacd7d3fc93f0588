"""Fixtures of the baseline tests: a network guard that fails any non-loopback connection."""

from __future__ import annotations

import ipaddress
import socket

import pytest

LOCAL_NAMES = {"localhost", "ip6-localhost", "ip6-loopback", ""}


def _is_loopback(host: str) -> bool:
    if host in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture
def no_network(monkeypatch):
    """Refuse (and record) every connection or name lookup that is not loopback or a Unix socket.
    The test using it asserts the record is empty."""
    attempts: list[str] = []
    real_connect, real_connect_ex, real_gai = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def check(sock, address):
        if sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = address[0] if isinstance(address, tuple) else str(address)
        if not _is_loopback(str(host)):
            attempts.append(f"connect {address}")
            raise ConnectionRefusedError(f"network guard: non-loopback connection to {address} refused")

    def connect(sock, address):
        check(sock, address)
        return real_connect(sock, address)

    def connect_ex(sock, address):
        check(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host, *a, **k):
        h = host.decode() if isinstance(host, bytes) else (host or "")
        if not _is_loopback(h):
            attempts.append(f"getaddrinfo {h}")
            raise socket.gaierror(f"network guard: lookup of {h} refused")
        return real_gai(host, *a, **k)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert attempts == [], f"network contacted: {attempts}"
