"""Int8 compute for a model whose weights are stored as int8 (SPEC §4, §10).

The default model's file keeps each weight matrix as an int8 tensor that the graph dequantises
(Cast to float, then Mul by one scale per output column) before its MatMul. onnxruntime folds
those into fp32 weights at load, so the file computes in fp32. `int8_graph(model)` rewrites each
such Cast → Mul → MatMul into onnxruntime's `DynamicQuantizeMatMul` on the int8 weights as
stored, with their own scales: the activations are quantised on each call (one scale per
tensor), the product runs in integers and is rescaled to float. benches/RESULTS.md measures the
speed and the vectors' agreement with the fp32 compute.

Only the graph's structure changes; every weight is the file's own bytes. The rewrite reads and
writes ONNX's protobuf wire format itself (the few fields of ModelProto, GraphProto, NodeProto
and TensorProto it needs; everything else is copied through byte for byte), so onnx is not a
runtime dependency.

Owns: finding the pattern and rewriting it. Does not own: saving or opening the graph
(`recall.graphs`, `recall.models`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["VERSION", "NoInt8Weights", "int8_graph"]

#: Bumped when the rewrite changes the graph it makes: saved graphs are kept per version.
VERSION = 1

# Field numbers in onnx.proto.
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_OUTPUT = 1, 5, 12
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_ATTR_NAME, _ATTR_INT, _ATTR_TYPE, _ATTR_TYPE_INT = 1, 3, 20, 2
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME = 1, 2, 8
_VALUE_NAME = 1
_FLOAT, _INT8 = 1, 3
_VARINT, _LEN = 0, 2


class NoInt8Weights(ValueError):
    """The graph has no MatMul whose weights are int8 dequantised by Cast → Mul."""


def _varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated protobuf message")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 64 bits")


def _put_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are written as ten bytes, as protobuf does
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


@dataclass
class _Field:
    number: int
    wire: int
    #: The payload: an int for varints, the bytes for length-delimited fields, the raw bytes
    #: for fixed-width ones.
    value: int | bytes
    #: The whole field as it was read (tag included), copied through when unchanged.
    raw: bytes


def _fields(data: bytes) -> Iterator[_Field]:
    view, pos = memoryview(data), 0
    while pos < len(data):
        start = pos
        tag, pos = _varint(view, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(view, pos)
        elif wire == _LEN:
            size, pos = _varint(view, pos)
            value, pos = bytes(view[pos : pos + size]), pos + size
        elif wire in (1, 5):  # fixed 64 / fixed 32
            width = 8 if wire == 1 else 4
            value, pos = bytes(view[pos : pos + width]), pos + width
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(data):
            raise ValueError("truncated protobuf message")
        yield _Field(number, wire, value, bytes(view[start:pos]))


def _len_field(number: int, payload: bytes) -> bytes:
    return _put_varint(number << 3 | _LEN) + _put_varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return _put_varint(number << 3 | _VARINT) + _put_varint(value)


def _text(value: int | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else ""


@dataclass
class _Node:
    op: str = ""
    domain: str = ""
    name: str = ""
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    #: Integer attributes by name (Cast's `to`).
    ints: dict[str, int] = field(default_factory=dict)

    @classmethod
    def read(cls, raw: bytes) -> _Node:
        node = cls()
        for f in _fields(raw):
            if f.number == _NODE_INPUT:
                node.inputs.append(_text(f.value))
            elif f.number == _NODE_OUTPUT:
                node.outputs.append(_text(f.value))
            elif f.number == _NODE_NAME:
                node.name = _text(f.value)
            elif f.number == _NODE_OP:
                node.op = _text(f.value)
            elif f.number == _NODE_DOMAIN:
                node.domain = _text(f.value)
            elif f.number == _NODE_ATTRIBUTE and isinstance(f.value, bytes):
                attr = {a.number: a.value for a in _fields(f.value)}
                value = attr.get(_ATTR_INT)
                if isinstance(value, int):
                    node.ints[_text(attr.get(_ATTR_NAME, b""))] = value
        return node


@dataclass
class _Tensor:
    fields: list[_Field]
    name: str
    dtype: int
    dims: list[int]

    @classmethod
    def read(cls, raw: bytes) -> _Tensor:
        fields = list(_fields(raw))
        name, dtype, dims = "", 0, []
        for f in fields:
            if f.number == _TENSOR_NAME:
                name = _text(f.value)
            elif f.number == _TENSOR_TYPE and isinstance(f.value, int):
                dtype = f.value
            elif f.number == _TENSOR_DIMS:
                if isinstance(f.value, int):
                    dims.append(f.value)
                else:  # packed
                    pos = 0
                    while pos < len(f.value):
                        d, pos = _varint(f.value, pos)
                        dims.append(d)
        return cls(fields, name, dtype, dims)

    def reshaped(self, dims: list[int]) -> bytes:
        """This tensor with other dims (the same elements), as a GraphProto initializer field."""
        body = b"".join(_int_field(_TENSOR_DIMS, d) for d in dims)
        body += b"".join(f.raw for f in self.fields if f.number != _TENSOR_DIMS)
        return _len_field(_GRAPH_INITIALIZER, body)


def _node(
    op: str, inputs: list[str], outputs: list[str], name: str, to: int | None = None
) -> bytes:
    """A GraphProto node field; `to` is Cast's target type."""
    body = b"".join(_len_field(_NODE_INPUT, i.encode()) for i in inputs)
    body += b"".join(_len_field(_NODE_OUTPUT, o.encode()) for o in outputs)
    body += _len_field(_NODE_NAME, name.encode()) + _len_field(_NODE_OP, op.encode())
    if to is not None:
        attr = _len_field(_ATTR_NAME, b"to") + _int_field(_ATTR_INT, to)
        body += _len_field(_NODE_ATTRIBUTE, attr + _int_field(_ATTR_TYPE, _ATTR_TYPE_INT))
    return _len_field(_GRAPH_NODE, body)


def _integer_matmul(matmul: _Node, weight: str, scale: str, quantised: set[str]) -> bytes:
    """The nodes that replace `matmul`: its input quantised to uint8 (once per input, shared by
    the MatMuls that read it), the integer product with the int8 weight, and its rescaling by
    the input's scale times the weight's. onnxruntime fuses these into its own integer MatMul
    kernels, as it does for `onnxruntime.quantization.quantize_dynamic`'s graphs."""
    x, y, name = matmul.inputs[0], matmul.outputs[0], matmul.name or matmul.outputs[0]
    xq, xs, xz = f"{x}/int8", f"{x}/int8_scale", f"{x}/int8_zero"
    out = b""
    if x not in quantised:
        quantised.add(x)
        out += _node("DynamicQuantizeLinear", [x], [xq, xs, xz], f"{x}/quantise")
    out += _node("MatMulInteger", [xq, weight, xz], [f"{y}/int32"], f"{name}/int8")
    out += _node("Cast", [f"{y}/int32"], [f"{y}/float"], f"{name}/float", to=_FLOAT)
    out += _node("Mul", [xs, scale], [f"{y}/scale"], f"{name}/scales")
    out += _node("Mul", [f"{y}/float", f"{y}/scale"], [y], f"{name}/rescale")
    return out


def _rewrite_graph(graph: bytes) -> tuple[bytes, int]:
    fields = list(_fields(graph))
    nodes = [_Node.read(_payload(f)) for f in fields if f.number == _GRAPH_NODE and _is(f)]
    read = [_Tensor.read(_payload(f)) for f in fields if f.number == _GRAPH_INITIALIZER and _is(f)]
    tensors = {t.name: t for t in read}
    uses: Counter[str] = Counter(i for n in nodes for i in n.inputs)
    for f in fields:
        if f.number == _GRAPH_OUTPUT and isinstance(f.value, bytes):
            uses.update(_text(v.value) for v in _fields(f.value) if v.number == _VALUE_NAME)
    made_by = {o: n for n in nodes for o in n.outputs}

    replaced: dict[int, bytes] = {}  # id(node) -> its new field
    dropped: set[int] = set()
    columns: dict[str, bytes] = {}  # scale name -> its 1-D initializer field
    quantised: set[str] = set()  # inputs already quantised
    for matmul in nodes:
        if matmul.op != "MatMul" or matmul.domain or len(matmul.inputs) != 2:
            continue
        mul = made_by.get(matmul.inputs[1])
        if mul is None or mul.op != "Mul" or len(mul.inputs) != 2 or uses[mul.outputs[0]] != 1:
            continue
        cast = next((made_by[i] for i in mul.inputs if i in made_by), None)
        if cast is None or cast.op != "Cast" or cast.ints.get("to") != _FLOAT:
            continue
        weight = tensors.get(cast.inputs[0]) if cast.inputs else None
        scale = tensors.get(next((i for i in mul.inputs if i != cast.outputs[0]), ""))
        if weight is None or scale is None or uses[cast.outputs[0]] != 1:
            continue
        if weight.dtype != _INT8 or len(weight.dims) != 2 or scale.dtype != _FLOAT:
            continue
        n = weight.dims[1]
        size = 1
        for d in scale.dims:
            size *= d
        # One scale per output column (or one for all), read as a 1-D tensor.
        if size not in (1, n) or any(d != 1 for d in scale.dims[:-1]):
            continue
        if size == n and scale.dims != [n]:
            if uses[scale.name] != 1:
                continue
            columns[scale.name] = scale.reshaped([n])
        replaced[id(matmul)] = _integer_matmul(matmul, weight.name, scale.name, quantised)
        dropped.update((id(mul), id(cast)))
    if not replaced:
        raise NoInt8Weights("no MatMul takes int8 weights dequantised by Cast -> Mul")

    out = bytearray()
    node_at, tensor_at = iter(nodes), iter(read)
    for f in fields:
        if f.number == _GRAPH_NODE and _is(f):
            node = next(node_at)
            if id(node) not in dropped:
                out += replaced.get(id(node), f.raw)
        elif f.number == _GRAPH_INITIALIZER and _is(f):
            out += columns.get(next(tensor_at).name, f.raw)
        else:
            out += f.raw
    return bytes(out), len(replaced)


def _is(f: _Field) -> bool:
    return f.wire == _LEN and isinstance(f.value, bytes)


def _payload(f: _Field) -> bytes:
    return f.value if isinstance(f.value, bytes) else b""


def int8_graph(model: bytes) -> tuple[bytes, int]:
    """The model with its int8-stored MatMul weights computed in int8, and how many MatMuls
    were rewritten. Raises NoInt8Weights when there is nothing to rewrite, ValueError on bytes
    that are not a protobuf message. The operators are standard ONNX (opset 10 and later)."""
    out = bytearray()
    rewritten = 0
    for f in _fields(model):
        if f.number == _MODEL_GRAPH and _is(f):
            graph, rewritten = _rewrite_graph(_payload(f))
            out += _len_field(_MODEL_GRAPH, graph)
        else:
            out += f.raw
    if not rewritten:
        raise NoInt8Weights("the model has no graph")
    return bytes(out), rewritten
