"""int8 ONNX files made by Electa's exports, and the mark that says how they were made.

onnxruntime's ``MatMulInteger`` on an x86 CPU without VNNI (AVX2 alone) multiplies unsigned
8-bit activations by signed 8-bit weights in pairs summed into 16 bits, which saturate when a
weight uses the full 8 bits (255 x 127 x 2 > 32,767; 255 x 64 x 2 is not): the same file then
computes other numbers than on a VNNI machine (measured on this project's AVX2 machine: a
768 x 768 product of random full-range weights off by up to 112,349 of 602,572, and
all-mpnet-base-v2 quantised so read as another model, cosine about 0 to torch's vectors).
Electa's exports (:mod:`electa.embedders.mpnet_export`, :func:`electa.eval.rerank_training.export`)
keep 7-bit weights and write :data:`WEIGHT_BITS` into the file's metadata, which a session reads
without the ``onnx`` package (:func:`props`), so that a file made before can be told apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

WEIGHT_BITS = "electa_int8_weight_bits"
QUANTISED_BY = "onnx.quantize"  # the producer name onnxruntime's quantiser writes


def quantise(fp32: Path, out: Path, marks: dict[str, str] | None = None, **options: Any) -> None:
    """``fp32`` quantised by onnxruntime's dynamic int8 quantiser into ``out`` with 7-bit weights,
    and marked so (:data:`WEIGHT_BITS`, with ``marks``); ``options`` go to ``quantize_dynamic``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, reduce_range=True, **options)
    mark(out, **{WEIGHT_BITS: "7", **(marks or {})})


def mark(path: Path, **values: str) -> None:
    """Write ``values`` into the metadata of the ONNX file at ``path`` (needs the ``onnx``
    package: the exports' extra)."""
    import onnx

    model = onnx.load(str(path))
    onnx.helper.set_model_props(model, {**{p.key: p.value for p in model.metadata_props}, **values})
    onnx.save(model, str(path))


def props(session: Any) -> dict[str, str]:
    """The metadata an onnxruntime session's file carries."""
    return dict(session.get_modelmeta().custom_metadata_map)


def may_saturate(session: Any) -> bool:
    """Whether the session's file was quantised by onnxruntime without Electa's mark of 7-bit
    weights: on an x86 CPU without VNNI its products may saturate (a file of another quantiser,
    or none, is not judged)."""
    return session.get_modelmeta().producer_name == QUANTISED_BY and props(session).get(WEIGHT_BITS) != "7"
