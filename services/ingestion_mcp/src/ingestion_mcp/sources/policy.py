"""One immutable policy object for every fetcher, built once from settings at start-up."""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import certifi

MiB = 1024 * 1024

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class AllowList:
    """Hosts an operator opened on purpose: names, `name:port` pairs and CIDR ranges."""

    names: frozenset[str] = frozenset()
    name_ports: frozenset[tuple[str, int]] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: tuple[str, ...] | list[str]) -> AllowList:
        names: set[str] = set()
        name_ports: set[tuple[str, int]] = set()
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            host, sep, port = entry.rpartition(":")
            if sep and port.isdigit() and host and not host.endswith(":"):
                name_ports.add((_norm_host(host), int(port)))
            else:
                names.add(_norm_host(entry))
        return cls(frozenset(names), frozenset(name_ports), tuple(networks))

    def allows_name(self, host: str, port: int) -> bool:
        host = _norm_host(host)
        return host in self.names or (host, port) in self.name_ports

    def allows_address(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return any(address.version == net.version and address in net for net in self.networks)


def _norm_host(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


@dataclass(frozen=True)
class SourcePolicy:
    """Limits and openings for URL, path and repository sources (defaults are the safe ones)."""

    allowed_hosts: AllowList = field(default_factory=AllowList)
    allowed_ports: frozenset[int] | None = None  # None: any port
    max_redirects: int = 5
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    total_timeout_s: float = 120.0  # a server trickling one byte per second still ends here
    max_download_bytes: int = 10 * MiB  # docs-server fetch_file default (maxFileSizeMB=10)
    ca_bundle: Path | None = None  # extra trust anchors (a private CA); None: the certifi bundle
    user_agent: str = "ingestion-mcp/0.1 (+source fetcher)"
    repo_schemes: frozenset[str] = frozenset({"https"})  # add "file" only in tests / trusted setups
    repo_max_files: int = 1000
    repo_max_file_bytes: int = 1 * MiB
    repo_max_total_bytes: int = 50 * MiB  # rendered Markdown of all selected files
    repo_max_clone_bytes: int = 500 * MiB  # on-disk size of the clone while it downloads
    repo_timeout_s: float = 300.0

    @classmethod
    def build(cls, *, allowed_hosts: tuple[str, ...] | list[str] = (), **limits: Any) -> SourcePolicy:
        """A policy from plain values (an allow-list as strings, ports as a list)."""
        ports = limits.pop("allowed_ports", None)
        schemes = limits.pop("repo_schemes", None)
        if ports is not None:
            limits["allowed_ports"] = frozenset(int(p) for p in ports) or None
        if schemes is not None:
            limits["repo_schemes"] = frozenset(s.lower() for s in schemes)
        return cls(allowed_hosts=AllowList.parse(tuple(allowed_hosts)), **limits)

    @classmethod
    def from_settings(cls, settings: Any) -> SourcePolicy:
        """Read the optional `source_*` fields of a settings object; absent ones keep the defaults."""
        mapping = {
            "allowed_ports": "source_allowed_ports",
            "max_redirects": "source_max_redirects",
            "connect_timeout_s": "source_connect_timeout_s",
            "read_timeout_s": "source_read_timeout_s",
            "total_timeout_s": "source_total_timeout_s",
            "max_download_bytes": "source_max_download_bytes",
            "ca_bundle": "source_ca_bundle",
            "repo_max_files": "repo_max_files",
            "repo_max_file_bytes": "repo_max_file_bytes",
            "repo_max_total_bytes": "repo_max_total_bytes",
            "repo_max_clone_bytes": "repo_max_clone_bytes",
            "repo_timeout_s": "repo_timeout_s",
        }
        limits = {key: getattr(settings, attr) for key, attr in mapping.items() if getattr(settings, attr, None)}
        hosts = getattr(settings, "source_allowed_hosts", None) or ()
        return cls.build(allowed_hosts=list(hosts), **limits)

    def __post_init__(self) -> None:
        if self.max_redirects < 0 or self.max_download_bytes <= 0 or self.repo_max_files <= 0:
            raise ValueError("max_redirects must be >= 0; max_download_bytes and repo_max_files must be > 0.")
        if self.ca_bundle is not None and not Path(self.ca_bundle).is_file():
            raise ValueError(f"CA bundle {self.ca_bundle} does not exist; point it at a PEM file.")
        unknown = self.repo_schemes - {"https", "http", "file"}
        if unknown:
            raise ValueError(f"Unsupported repository schemes {sorted(unknown)}; use https, http or file.")

    def ssl_context(self) -> ssl.SSLContext:
        """Verification always on: certifi's roots, plus the configured private CA if any."""
        context = ssl.create_default_context(cafile=certifi.where())
        if self.ca_bundle is not None:
            context.load_verify_locations(cafile=str(self.ca_bundle))
        return context
