"""Fake (meta) kernel registration for the __NAME__ ops: what torch.compile traces with.

One build's files can be imported twice in a process (say, from build_local's output and
again through kernels.get_local_kernel on a Hub layout that links to them): the loader
recognises the file and loads the library once, but the package's `__init__` runs twice.
Both runs register the same function for the same build-unique namespace, so replacing
the first is harmless; torch 2.8-2.11 need allow_override=True for that, and older torch
(no such flag) keeps the first registration. A *copy* of the build at another path is a
second library: its ops register the namespace again and the process aborts ("Only a
single TORCH_LIBRARY can be used to register the namespace"), so link a build into a Hub
layout, never copy it into a process that has already imported it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._ops import add_op_namespace_prefix


def register_fake(op_name: str, fake: Callable[..., torch.Tensor]) -> None:
    """Register `fake` for this build's `op_name` (the namespace prefix is added here)."""
    qualname = add_op_namespace_prefix(op_name)
    try:
        torch.library.register_fake(qualname, fake, allow_override=True)
    except TypeError:  # torch < 2.8
        try:
            torch.library.register_fake(qualname, fake)
        except RuntimeError as exc:
            if "already has" not in str(exc):
                raise
