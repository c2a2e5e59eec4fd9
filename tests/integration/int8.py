"""An int8 ONNX model's integer products done exactly, to tell what a CPU computed from what the
file means.

onnxruntime's ``MatMulInteger`` on an x86 CPU without VNNI (AVX2 alone) multiplies unsigned
8-bit activations by signed 8-bit weights in pairs summed into 16 bits, which saturate
(255 x 127 x 2 > 32,767): the same file then gives other numbers than on a VNNI machine.
:func:`exact_integer_products` rewrites every ``MatMulInteger`` as the same product in float
(its operands are integers under 256 in size: a row's sum is exact while it stays under
float32's 2^24, and within float32's rounding past it), so a session of the rewritten model computes what the file means,
on any CPU."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

SATURATION_FREE = 64  # the largest weight whose products cannot saturate: 255 x 64 x 2 <= 32,767


def exact_integer_products(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose ``MatMulInteger`` nodes are float ``MatMul`` of their operands
    less their zero points, cast back to int32 (what the node defines)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    constants = {t.name: t for t in out.graph.initializer}
    nodes = []
    for node in out.graph.node:
        if node.op_type != "MatMulInteger":
            nodes.append(node)
            continue
        a, b, *zeros = node.input
        if zeros and zeros[0] in constants and list(constants[zeros[0]].dims) not in ([], [1]):
            raise ValueError(f"{node.name}: a zero point per row of A is not rewritten (it would broadcast along K)")
        name = node.name or node.output[0]
        floats = []
        for i, (value, zero) in enumerate(zip((a, b), [*zeros, "", ""][:2], strict=True)):
            nodes.append(oh.make_node("Cast", [value], [f"{name}/exact{i}"], to=TensorProto.FLOAT))
            term = f"{name}/exact{i}"
            if zero:
                nodes.append(oh.make_node("Cast", [zero], [f"{name}/zero{i}"], to=TensorProto.FLOAT))
                nodes.append(oh.make_node("Sub", [term, f"{name}/zero{i}"], [f"{name}/centred{i}"]))
                term = f"{name}/centred{i}"
            floats.append(term)
        nodes.append(oh.make_node("MatMul", floats, [f"{name}/exact"]))
        nodes.append(oh.make_node("Cast", [f"{name}/exact"], [node.output[0]], to=TensorProto.INT32))
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def largest_integer_weight(model: onnx.ModelProto) -> int:
    """The largest magnitude among the weights of ``model``'s ``MatMulInteger`` nodes (0 when it
    has none); ``ValueError`` for a weight that is not a constant (it could not be read)."""
    weights = {t.name: t for t in model.graph.initializer}
    largest = 0
    for node in model.graph.node:
        if node.op_type == "MatMulInteger":
            if node.input[1] not in weights:
                raise ValueError(f"{node.name}: its weight {node.input[1]} is computed, not a constant")
            largest = max(largest, int(np.abs(numpy_helper.to_array(weights[node.input[1]]).astype(np.int32)).max()))
    return largest


def integer_nodes(model: onnx.ModelProto) -> int:
    return sum(node.op_type == "MatMulInteger" for node in model.graph.node)
