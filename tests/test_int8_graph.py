"""recall.int8_graph: int8-stored weights (Cast -> Mul by column scales -> MatMul) rewritten to
run in int8, on small graphs built here with onnx and run by onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from recall.int8_graph import NoInt8Weights, int8_graph

K, N = 16, 8


def _weights(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.integers(-127, 128, size=(K, N), dtype=np.int8)
    scale = rng.uniform(0.001, 0.01, size=(1, N)).astype(np.float32)
    return q, scale


def _model(*, second_use: bool = False, scale_shape: tuple[int, ...] = (1, N)) -> bytes:
    """x [2, K] @ (Cast(q) * scale) + bias; `second_use` also sends the dequantised weights to
    the graph's output (then the pattern must be left alone)."""
    q, scale = _weights()
    nodes = [
        helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["qf", "scale"], ["w"]),
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="proj"),
        helper.make_node("Add", ["xw", "bias"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, N])]
    if second_use:
        outputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [K, N]))
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, K])],
        outputs,
        initializer=[
            numpy_helper.from_array(q, "q"),
            numpy_helper.from_array(scale.reshape(scale_shape), "scale"),
            numpy_helper.from_array(np.full(N, 0.5, dtype=np.float32), "bias"),
        ],
        doc_string="kept through the rewrite",
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def _run(model: bytes, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["y"], {"x": x})[0])


def test_the_matmul_runs_on_the_stored_int8_weights() -> None:
    import onnx

    rewritten, count = int8_graph(_model())
    assert count == 1
    model = onnx.load_from_string(rewritten)
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul", "Add"]
    quantise, product = model.graph.node[0], model.graph.node[1]
    assert list(quantise.input) == ["x"] and list(product.input)[1] == "q"  # the stored weights
    assert list(model.graph.node[-2].output) == ["xw"]  # the MatMul's output, read by the Add
    assert model.graph.doc_string == "kept through the rewrite"
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "scale"))
    assert scale.shape == (N,)  # one scale per column, as the operator reads it

    q, column = _weights()
    x = np.random.default_rng(5).normal(size=(2, K)).astype(np.float32)
    fp32 = _run(_model(), x)
    np.testing.assert_allclose(fp32, x @ (q * column) + 0.5, rtol=1e-5, atol=1e-5)
    # The integer product of uint8-quantised activations: within one activation step.
    got = _run(rewritten, x)
    step = (max(0.0, x.max()) - min(0.0, x.min())) / 255
    bound = step * np.abs(q * column).sum(axis=0)
    assert np.all(np.abs(got - fp32) <= bound + 1e-6)
    assert not np.array_equal(got, fp32)


def test_matmuls_reading_one_input_share_its_quantisation() -> None:
    import onnx

    model = onnx.load_from_string(_model())
    graph = model.graph
    graph.node.extend(
        [
            helper.make_node("Cast", ["q"], ["qf2"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["qf2", "scale2"], ["w2"]),
            helper.make_node("MatMul", ["x", "w2"], ["y2"], name="second"),
        ]
    )
    graph.initializer.append(numpy_helper.from_array(_weights()[1] * 2, "scale2"))
    graph.output.append(helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2, N]))
    rewritten, count = int8_graph(model.SerializeToString())
    ops = [n.op_type for n in onnx.load_from_string(rewritten).graph.node]
    assert count == 2 and ops.count("DynamicQuantizeLinear") == 1
    assert ops.count("MatMulInteger") == 2 and "MatMul" not in ops
    x = np.random.default_rng(7).normal(size=(2, K)).astype(np.float32)
    session = ort.InferenceSession(rewritten, providers=["CPUExecutionProvider"])
    y, y2 = session.run(["y", "y2"], {"x": x})
    np.testing.assert_allclose(y2, 2 * (y - 0.5), rtol=1e-5, atol=1e-6)


def test_a_scalar_scale_is_read_as_one_scale_for_every_column() -> None:
    import onnx

    q, _ = _weights()
    model = onnx.load_from_string(_model())
    for t in model.graph.initializer:
        if t.name == "scale":
            t.CopyFrom(numpy_helper.from_array(np.array(0.004, dtype=np.float32), "scale"))
    rewritten, count = int8_graph(model.SerializeToString())
    assert count == 1
    x = np.random.default_rng(6).normal(size=(2, K)).astype(np.float32)
    np.testing.assert_allclose(_run(rewritten, x), x @ (q * 0.004) + 0.5, atol=0.05)


def test_dequantised_weights_used_elsewhere_are_left_alone() -> None:
    with pytest.raises(NoInt8Weights):
        int8_graph(_model(second_use=True))


def test_a_graph_without_int8_weights_is_refused() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, N])],
        initializer=[numpy_helper.from_array(np.ones((K, N), dtype=np.float32), "w")],
    )
    with pytest.raises(NoInt8Weights):
        int8_graph(helper.make_model(graph).SerializeToString())


@pytest.mark.parametrize("data", [b"\x0a\xff\xff", b"\x07", b"not a model at all"])
def test_bytes_that_are_not_a_model_raise_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        int8_graph(data)
