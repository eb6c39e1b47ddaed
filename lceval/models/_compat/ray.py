"""Ray internals lceval needs while Ray 2.60 has no public API for them (extra ``ray``).

Each function names the public feature it waits for; ``lceval.models.replicas`` calls them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def enable_token_auth() -> None:
    """Turn on Ray's token authentication when a token is on this machine, as ``ray start`` and
    Ray's CLI do before joining a cluster.

    Waits for: ``ray.init`` reading the token itself (Ray 2.60 does so only in its CLI).
    """
    from ray._private.authentication import (
        authentication_token_setup as auth,
    )  # optional extra: ray

    auth.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


@contextmanager
def patient_raylet_wait(wait_s: float, raylet_alive: Callable[[], bool]) -> Iterator[None]:
    """While the block runs, a local ``ray.init`` waits up to ``wait_s`` seconds for its raylet
    to register (Ray's own wait is a fixed 30 s), giving up after 5 s once ``raylet_alive()`` is
    False.

    Waits for: a setting of the raylet registration wait in ``ray.init`` (Ray 2.60 hard-codes
    30 s in ``ray._private.node``; ray-project/ray#47087 raised the old 10 s default, no setting).
    """
    import ray._private.services as services  # optional extra: ray

    original = services.get_node

    def patient_get_node(*args: Any, **kwargs: Any) -> Any:
        t0 = time.monotonic()
        while True:
            try:
                return original(*args, **kwargs)
            except RuntimeError:  # until the raylet registers
                waited = time.monotonic() - t0
                if waited > wait_s or (waited > 5 and not raylet_alive()):
                    raise
                time.sleep(0.5)

    services.get_node = patient_get_node
    try:
        yield
    finally:
        services.get_node = original


def gcs_refusal(host: str, port: int, timeout_s: float) -> str | None:
    """None when Ray's GCS answers at ``host:port`` (any status but the three below counts:
    UNAUTHENTICATED is a GCS with token auth), else the gRPC status name (``UNAVAILABLE``,
    ``UNIMPLEMENTED``, ``DEADLINE_EXCEEDED``): something else listens there.

    Waits for: a public "is there a cluster at this address" check in Ray (``ray.init`` retries
    for minutes before failing); uses the GCS's generated gRPC stubs (``ray.core.generated``).
    """
    import grpc  # optional extra: ray (grpc comes with it)
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc  # optional extra: ray

    channel = grpc.insecure_channel(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    try:
        gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
            gcs_service_pb2.GetClusterIdRequest(),  # type: ignore[attr-defined]  # no stubs
            timeout=timeout_s,
        )
    except grpc.RpcError as exc:
        name = exc.code().name
        if name in ("UNAVAILABLE", "UNIMPLEMENTED", "DEADLINE_EXCEEDED"):
            return str(name)
    finally:
        channel.close()
    return None
