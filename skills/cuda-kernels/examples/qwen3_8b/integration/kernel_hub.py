"""The Kernel Hub route: `kernels.kernelize` with a mapping to this example's `layers`.

integration/README.md ("Kernel Hub route") gives the facts this rests on, each a test of
tests/examples/test_qwen3_integration.py. `local_repository()` writes the layout
`LocalLayerRepository` loads around a build_local.py package; a kernel-builder build or a
Hub download needs nothing extra. kernels 0.19.1 logs "the metadata does not record a
digest" for this layout and loads it: its digest does not descend into the linked package
directory, so a digest would verify nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from torch import nn

# mapping name -> (layer class in <package>.layers, transformers classes it replaces)
HUB_LAYERS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "RMSNorm": (
        "RMSNorm",
        [("transformers.models.qwen3.modeling_qwen3", "Qwen3RMSNorm"), ("transformers.models.llama.modeling_llama", "LlamaRMSNorm")],
    ),
    "SwiGLUMLP": (
        "SwiGLUMLP",
        [("transformers.models.qwen3.modeling_qwen3", "Qwen3MLP"), ("transformers.models.llama.modeling_llama", "LlamaMLP")],
    ),
}


def local_repository(package: ModuleType | Path, dest: Path, *, archs: list[str] | None = None) -> Path:
    """Lay out `package` (an imported package or its directory) as a local kernel repository.

    Writes `dest/metadata.json` and links `dest/<python_name>` to the package directory.
    Returns `dest`, ready for `LocalLayerRepository(repo_path=dest, layer_name=...)`.
    """
    package_dir = Path(package.__file__).parent if isinstance(package, ModuleType) else Path(package)
    python_name = package_dir.name
    if not (package_dir / "__init__.py").is_file():
        raise FileNotFoundError(f"{package_dir} is not a Python package (no __init__.py)")
    dest.mkdir(parents=True, exist_ok=True)
    link = dest / python_name
    if link.is_symlink() or link.exists():
        if link.resolve() != package_dir.resolve():
            raise FileExistsError(f"{link} exists and is not a link to {package_dir}")
    else:
        os.symlink(package_dir.resolve(), link, target_is_directory=True)
    digest = hashlib.sha256(str(package_dir.resolve()).encode()).hexdigest()[:10]
    metadata = {
        # The loader imports the package under this module name: unique per build path.
        "id": f"_{python_name}_{digest}",
        "name": python_name.replace("_", "-"),
        "version": 1,
        "license": "Apache-2.0",
        "backend": {"type": "cuda", **({"archs": archs} if archs else {})},
        "python-depends": [],
    }
    text = json.dumps(metadata, indent=2) + "\n"
    target = dest / "metadata.json"
    if not target.exists() or target.read_text() != text:
        tmp = target.with_suffix(".json.tmp")
        tmp.write_text(text)
        tmp.replace(target)
    return dest


def load_local_kernel(repo_path: Path) -> ModuleType:
    """`kernels.get_local_kernel`, plus importing `<kernel>.layers`.

    kernels finds layers as the attribute `kernel.layers`, which exists only if `__init__`
    imports it; importing it here removes that dependency. kernels caches the module per
    build path, so `kernelize` gets this same object. A second import of a build the caller
    imported itself is allowed by the package's fake registrations (its `__init__.py`).
    """
    import kernels

    module = kernels.get_local_kernel(repo_path)
    if getattr(module, "layers", None) is None:
        importlib.import_module(f"{module.__name__}.layers")
    return module


def _resolve_class(module_name: str, class_name: str) -> type:
    return getattr(importlib.import_module(module_name), class_name)


@contextlib.contextmanager
def hub_layer_names(names: dict[str, tuple[str, list[tuple[str, str]]]] = HUB_LAYERS) -> Iterator[None]:
    """Make transformers' classes kernelize-able under `names` for the `with` block.

    Equivalent to what transformers' `use_kernel_forward_from_hub` decorator does when it
    is active, limited to exact instances of each class, undone on exit (a class transformers
    marked itself gets its own name and condition back).
    """
    import kernels

    saved: list[tuple[type, dict[str, Any]]] = []
    try:
        for layer_name, (_layer, targets) in names.items():
            for module_name, class_name in targets:
                cls = _resolve_class(module_name, class_name)
                saved.append((cls, {k: cls.__dict__[k] for k in ("kernel_layer_name", "kernel_condition") if k in cls.__dict__}))
                # Also when transformers' own decorator is active (kernels inside its window): its
                # condition accepts subclasses, which may compute another formula.
                kernels.replace_kernel_forward_from_hub(cls, layer_name, condition=lambda m, cls=cls: type(m) is cls)
        yield
    finally:
        for cls, previous in saved:
            for key in ("kernel_layer_name", "kernel_condition"):
                if key in previous:
                    setattr(cls, key, previous[key])
                elif key in cls.__dict__:
                    delattr(cls, key)


def kernelize_qwen3(
    model: nn.Module,
    repo_path: Path,
    *,
    device: str,
    compile_ready: bool = False,
    names: dict[str, tuple[str, list[tuple[str, str]]]] = HUB_LAYERS,
) -> dict[str, int]:
    """Swap Qwen3 norms and MLPs for this example's layers through `kernels.kernelize`.

    `device` is the kernels device type ("cuda", or "cpu" for the PyTorch fallback).
    `compile_ready=True` asks for Mode.INFERENCE | Mode.TORCH_COMPILE, which kernels
    grants only to layers declaring `can_torch_compile = True`. Returns how many modules
    now run each layer.
    """
    import kernels
    from kernels import LocalLayerRepository, Mode

    load_local_kernel(repo_path)
    mapping = {
        layer_name: {device: LocalLayerRepository(repo_path=repo_path, layer_name=layer_cls)}
        for layer_name, (layer_cls, _targets) in names.items()
    }
    mode = Mode.INFERENCE | Mode.TORCH_COMPILE if compile_ready else Mode.INFERENCE
    with hub_layer_names(names), kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        # Default fallback: modules whose name the mapping lacks keep transformers' forward
        # (inside transformers' window: its `SiLU` activation and `rotary_pos_emb` function,
        # which use_fallback=False would refuse); a layer that cannot be loaded still raises.
        # The returned counts say what was swapped.
        kernels.kernelize(model, mode=mode, device=device, use_fallback=True)
    return kernelized_counts(model)


def kernelized_counts(model: nn.Module) -> dict[str, int]:
    """Modules whose bound forward comes from a `layers` module of a kernel package."""
    counts: dict[str, int] = {}
    for module in model.modules():
        fn = getattr(module.__dict__.get("forward"), "__func__", None)
        owner = getattr(fn, "__qualname__", "")
        if fn is not None and getattr(fn, "__module__", "").endswith(".layers"):
            counts[owner.split(".")[0]] = counts.get(owner.split(".")[0], 0) + 1
    return counts


def unkernelize(model: nn.Module) -> int:
    """Drop the forwards kernelize bound from a kernel's `layers` (and the class-forward
    copies it binds for fallbacks); returns how many were removed."""
    removed = 0
    for module in model.modules():
        fn = getattr(module.__dict__.get("forward"), "__func__", None)
        if fn is None:
            continue
        if getattr(fn, "__module__", "").endswith(".layers") or fn is type(module).forward:
            del module.forward
            # kernels 0.19 records the swap's repository here; get_kernelized_layers would
            # still report the module as kernelized.
            module.__dict__.pop("_kernel_repo", None)
            removed += 1
    return removed


def module_for(repo_path: Path) -> ModuleType | None:
    """The module kernels imported for `repo_path` (None if not loaded yet)."""
    metadata = json.loads((Path(repo_path) / "metadata.json").read_text())
    return sys.modules.get(metadata["id"])
