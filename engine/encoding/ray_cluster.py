"""Starting a private local Ray, or joining a Ray cluster, for the encode job.

Ray is optional (`pip install "duplens[ray]"`) and is imported by this module's functions
only, so nothing else pays for it and a missing Ray is one clear message.

Privacy and files:
- Ray collects usage statistics by default (the head's dashboard process reports them to
  usage-stats.ray.io). `RAY_USAGE_STATS_ENABLED=0` is set in this process before Ray is
  imported, so every process a local Ray starts inherits it, and it goes into the runtime
  env of the work sent to a cluster. A cluster someone else started reports as its head
  was told to (`RAY_USAGE_STATS_ENABLED=0 ray start --head`, README).
- A local Ray keeps everything it writes (session logs, sockets, spilled objects, runtime
  env files) in a fresh `/tmp/duplens-ray-*` folder, removed when the session closes. Its
  authentication token (Ray 2.60 enables token auth for local clusters) is a random one
  kept in this process's environment for the rest of its life (Ray reads it once, when it
  is imported): left to itself, Ray would write ~/.ray/auth_token.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from engine.errors import ClusterError

# Set in this process before Ray initialises, and in the runtime env of cluster work.
PRIVATE_ENV = {"RAY_USAGE_STATS_ENABLED": "0"}
GCS_PORT, CLIENT_PORT = 6379, 10001
# A wrong address is reported after this long: Ray itself retries a GCS address for
# minutes (measured: 327 s for a closed port on this machine) before it gives up.
REACH_TIMEOUT_S = 5.0
NEEDS_RAY = '--executor ray needs Ray: pip install "duplens[ray]"'
_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def import_ray():
    """The `ray` module, imported with usage statistics off; ClusterError when missing."""
    os.environ.update(PRIVATE_ENV)
    try:
        import ray
    except ImportError as exc:
        raise ClusterError(NEEDS_RAY) from exc
    return ray


@dataclass
class RaySession:
    """This process's link to Ray: one it started (`owned`), joined, or found running."""

    address: str | None           # what the user asked for; None: a local Ray
    owned: bool = False           # ray.init was called here, so close() shuts it down
    temp_dir: str | None = None   # a local Ray's folder, removed on close

    def close(self) -> None:
        """Shut down what this session started; idempotent."""
        if not self.owned:
            return
        self.owned = False
        import ray

        ray.shutdown()
        if self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)


def connect(address: str | None, *, num_cpus: int | None = None) -> RaySession:
    """Start a local Ray (`address` None; `num_cpus`, default all cores) or join the
    cluster at `address` ("host:6379", "ray://host:10001" or "auto").

    A Ray this process is already connected to (a notebook's, a test session's) is used
    as it is, whatever `address` says, and left running on close: Ray allows one
    connection per process.
    """
    if address is None and "ray" not in sys.modules:
        _private_token()
    ray = import_ray()
    if ray.is_initialized():
        return RaySession(address)
    if address is None:
        return _start_local(ray, num_cpus or os.cpu_count() or 1)
    return _join(ray, address)


def _private_token() -> None:
    """A random token for local clusters, in the environment (set before Ray is imported:
    it reads the mode then), unless the user chose how Ray authenticates."""
    if not any(os.environ.get(name) for name in _AUTH_VARS):
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def _start_local(ray, num_cpus: int) -> RaySession:
    # /tmp, not the platform's temp folder: Ray's socket paths live under it, and macOS's
    # per-user temp folder makes them longer than a Unix socket path may be.
    base = "/tmp" if os.name == "posix" and Path("/tmp").is_dir() else None
    temp_dir = tempfile.mkdtemp(prefix="duplens-ray-", dir=base)
    session = RaySession(None, owned=True, temp_dir=temp_dir)
    try:
        # address="local": a new Ray here even when RAY_ADDRESS names a cluster.
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
                 _temp_dir=temp_dir, log_to_driver=False, logging_level=logging.WARNING)
    except Exception as exc:
        session.close()
        raise ClusterError(f"cannot start a local Ray: {_first_line(exc)}") from exc
    return session


def _join(ray, address: str) -> RaySession:
    if address != "auto":
        check_reachable(address)
    import engine

    runtime_env = {"env_vars": dict(PRIVATE_ENV),
                   # The workers run this very version of Duplens' engine (they still need
                   # its dependencies installed: torch, sentence-transformers).
                   "py_modules": [str(Path(engine.__file__).parent)]}
    try:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False,
                 logging_level=logging.WARNING)
    except Exception as exc:
        why = _first_line(exc)
        if _refused_token(exc):
            why = ("it refused this computer's Ray token; set RAY_AUTH_TOKEN to the "
                   "cluster's (`ray get-auth-token` on its head node)")
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {why}") from exc
    return RaySession(address, owned=True)


def _refused_token(exc: BaseException | None) -> bool:
    """Whether Ray's error (or one it was raised from) is a refused authentication token;
    Ray's own message then only says it failed to connect."""
    while exc is not None:
        if type(exc).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def check_reachable(address: str) -> None:
    """ClusterError in seconds when nothing answers at `address` (Ray would retry for
    minutes before saying so)."""
    host, port = _host_port(address)
    if not host:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: no host name")
    try:
        with socket.create_connection((host, port), timeout=REACH_TIMEOUT_S):
            pass
    except socket.gaierror:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: unknown host "
                           f"{host}") from None
    except ConnectionRefusedError:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: nothing listens "
                           f"on port {port} of {host}") from None
    except TimeoutError:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: no answer within "
                           f"{REACH_TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: "
                           f"{exc.strerror or exc}") from None


def _host_port(address: str) -> tuple[str, int]:
    """(host, port) of "host:port", "ray://host:port" or "[::1]:port", with Ray's default
    ports (10001 for a Ray Client address, 6379 for a GCS one) when none is given."""
    client = address.startswith("ray://")
    rest = address.split("://", 1)[1] if "://" in address else address
    parts = urlsplit(f"//{rest}")
    try:
        port = parts.port
    except ValueError:
        raise ClusterError(f"cannot reach the Ray cluster at {address}: bad port") from None
    return parts.hostname or "", port or (CLIENT_PORT if client else GCS_PORT)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
