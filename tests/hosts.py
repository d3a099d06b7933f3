"""Hosts for the tests: Linux network namespaces on one bridge, each with its own address, made and
removed by the test (``ip netns``, veth, a bridge; needs root and iproute2), and nginx from
Debian's package as the balancer in front of them. Without them the tests skip, saying so; under
CI (``CI=true``) they fail."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest


def need(what: str, why: str) -> None:
    message = f"{what} ({why}; .ci/run installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def need_hosts() -> None:
    if shutil.which("ip") is None:
        need("iproute2 is not installed", "Debian's iproute2: ip netns")
    if os.geteuid() != 0:
        need("not root", "network namespaces are made as root")
    if shutil.which("nginx") is None:
        need("nginx is not installed", "Debian's nginx-light: the balancer")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class Host:
    """One namespace: ``addr`` on the bridge; :meth:`cmd` runs a command inside it."""

    def __init__(self, ns: str, addr: str, link: str) -> None:
        self.ns, self.addr, self.link = ns, addr, link

    def cmd(self, *argv: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *argv]

    def pids(self) -> list[int]:
        out = subprocess.run(
            ["ip", "netns", "pids", self.ns], capture_output=True, text=True, timeout=30
        ).stdout
        return [int(p) for p in out.split()]

    def die(self) -> None:
        """As a host dies: every process in it killed (SIGKILL; its kernel closes their
        connections), then its link cut (nothing reaches it, nothing leaves it). A host lost
        without a word (power, network) is found only by timeouts: see docs/guide.md."""
        for pid in self.pids():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # the closing segments on their way
        ip("link", "set", self.link, "down")

    def revive(self) -> None:
        ip("link", "set", self.link, "up")


class Network:
    """A bridge in this namespace (its address ``.1``) and hosts on it, removed by :meth:`close`."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:4]
        taken = subprocess.run(
            ["ip", "-4", "addr"], capture_output=True, text=True, timeout=30
        ).stdout
        while True:
            self.prefix = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
            if f"inet {self.prefix}." not in taken:
                break
        self.cidr = f"{self.prefix}.0/24"
        self.bridge = f"tnb{self.tag}"
        self.gateway = f"{self.prefix}.1"
        self.hosts: list[Host] = []
        ip("link", "add", "name", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")

    def host(self, number: int) -> Host:
        """A new namespace at ``PREFIX.number``."""
        ns, link = f"tn{self.tag}h{number}", f"tn{self.tag}v{number}"
        ip("netns", "add", ns)
        host = Host(ns, f"{self.prefix}.{number}", link)
        self.hosts.append(host)
        ip("link", "add", link, "type", "veth", "peer", "name", link + "x")
        ip("link", "set", link, "master", self.bridge, "up")
        ip("link", "set", link + "x", "netns", ns)
        ip("-n", ns, "addr", "add", f"{host.addr}/24", "dev", link + "x")
        ip("-n", ns, "link", "set", link + "x", "up")
        ip("-n", ns, "link", "set", "lo", "up")
        return host

    def close(self) -> None:
        for host in self.hosts:
            for pid in host.pids():
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", host.ns], capture_output=True, timeout=30)
            subprocess.run(["ip", "link", "del", host.link], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, timeout=30)


class Nginx:
    """nginx in ``host``, balancing ``upstreams`` (``addr:port``) round robin at ``host.addr:port``:
    no stickiness, no buffering (SSE), a refused or failed connection tried on the next host, a
    new upstream connection per request (a kept one may be closed by a host that stops under a
    POST, which nginx does not send again)."""

    def __init__(
        self, host: Host, port: int, upstreams: list[str], each: bool = False, keepalive: int = 0
    ) -> None:
        """``each``: also a port for each upstream alone, ``port + 1 + i`` (``urls``), for a
        caller that must choose the host a request goes to (bench/stream_bench.py --hosts);
        ``keepalive``: a pool of that many idle upstream connections kept (the guide's config
        has none; bench/stream_bench.py --nginx-keepalive)."""
        self.root = Path(tempfile.mkdtemp(prefix="toolnexus-nginx-"))
        pool = f"keepalive {keepalive};" if keepalive else ""
        servers = "\n".join(f"    server {u} max_fails=1 fail_timeout=2s;" for u in upstreams)
        location = """
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_connect_timeout 1s;
      proxy_read_timeout 120s;
      proxy_next_upstream error timeout;"""
        if keepalive:
            location += """
      proxy_set_header Connection "";"""
        alone = "".join(
            f"""
  upstream agent{i} {{ server {u}; {pool} }}
  server {{
    listen {host.addr}:{port + 1 + i};
    location / {{
      proxy_pass http://agent{i};{location}
    }}
  }}"""
            for i, u in enumerate(upstreams if each else [])
        )
        self.urls = [f"http://{host.addr}:{port + 1 + i}" for i in range(len(upstreams) * each)]
        (self.root / "nginx.conf").write_text(f"""
worker_processes 1;
daemon off;
error_log {self.root}/error.log warn;
pid {self.root}/nginx.pid;
worker_rlimit_nofile 10000;
events {{ worker_connections 4096; }}
http {{
  log_format timed '$remote_addr - - [$time_local] "$request" $status $body_bytes_sent '
    '"-" "-" rt=$request_time uct=$upstream_connect_time uht=$upstream_header_time '
    'c=$connection r=$connection_requests';
  access_log {self.root}/access.log timed;
  client_body_temp_path {self.root}/body;
  proxy_temp_path {self.root}/proxy;
  fastcgi_temp_path {self.root}/fastcgi;
  uwsgi_temp_path {self.root}/uwsgi;
  scgi_temp_path {self.root}/scgi;
  upstream agents {{
{servers}
    {pool}
  }}
  server {{
    listen {host.addr}:{port};
    location / {{
      proxy_pass http://agents;{location}
    }}
  }}{alone}
}}
""")
        self.url = f"http://{host.addr}:{port}"
        self.proc = subprocess.Popen(
            host.cmd("nginx", "-p", str(self.root), "-c", str(self.root / "nginx.conf")),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def errors(self) -> str:
        path = self.root / "error.log"
        return path.read_text() if path.exists() else ""

    def statuses(self) -> list[str]:
        """The HTTP status of every request it answered (its access log's ninth field)."""
        path = self.root / "access.log"
        return (
            [line.split('"')[2].split()[0] for line in path.read_text().splitlines()]
            if path.exists()
            else []
        )

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)
