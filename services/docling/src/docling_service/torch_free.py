"""The converter's processes without torch, where nothing they run needs it (issue 49: memory and start of a worker).

docling imports torch and transformers where they are installed (its VLM and ASR options name their types), though
the model-free native PDF pipeline, the OCR (RapidOCR on ONNX Runtime) and the office and web formats never call
them. The development environment and the full image have torch (the gateway's ONNX export needs it), so there
every fork server and worker held it: ~200 MB of resident memory each (436 -> 237 MB for a ready fork server) and
~1.7 s of CPU per start. The pool preloads this module in its fork server, before docling, when no layout models
are configured (DOCLING_ARTIFACTS_PATH unset: the native pipeline, whatever is installed); workers fork from it
with the hook in place. With models configured, the standard pipeline needs torch, and it is left alone.

The hook refuses the modules as an install without them does (ModuleNotFoundError); docling handles that, and the
slim image, which has no torch at all, runs this way always (test_torch_free.py converts every kind so).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

HIDDEN = ("torch", "torchvision", "transformers")


class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".", 1)[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {fullname!r} (left out of the converter)", name=fullname)
        return None


if not any(isinstance(finder, NoTorch) for finder in sys.meta_path):
    sys.meta_path.insert(0, NoTorch())
