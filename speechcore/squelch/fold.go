package squelch

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ONNX protobuf field numbers (onnx.proto3) for the few messages specialise touches.
const (
	modelGraph = 7 // ModelProto.graph
	onnxFloat  = 1 // TensorProto.DataType.FLOAT

	graphInitializer = 5  // GraphProto.initializer
	graphInput       = 11 // GraphProto.input

	valueInfoName = 1 // ValueInfoProto.name
	valueInfoType = 2 // ValueInfoProto.type

	typeTensor      = 1 // TypeProto.tensor_type
	tensorTypeShape = 2 // TypeProto.Tensor.shape
	shapeDim        = 1 // TensorShapeProto.dim
	dimValue        = 1 // Dimension.dim_value
	dimParam        = 2 // Dimension.dim_param
	tensorDataType  = 2 // TensorProto.data_type
	tensorInt64Data = 7 // TensorProto.int64_data
	tensorName      = 8 // TensorProto.name
	onnxInt64       = 7 // TensorProto.DataType.INT64
)

// specialise rewrites a Silero export for the one way the squelch runs it: sr becomes a constant
// 16000 initializer instead of an input, and input gets its fixed shape [1, 576]. With the
// condition and the shape known, ONNX Runtime's constant folding inlines the graph's If on the
// sample rate and folds much of the shape arithmetic inside, which cuts the cost of a window by
// roughly a third to a half (BenchmarkPush250ms runs both graphs). The weights are untouched;
// TestSpecialisedModelAgrees checks the probabilities equal the export's as shipped. (Fixing
// state's shape [2, 1, 128] as well crashes ONNX Runtime 1.30 in session creation, so state
// stays as declared.) A model this cannot rewrite is run as shipped.
func specialise(model []byte) ([]byte, error) { return specialiseRows(model, 1) }

// specialiseRows is specialise with input's first dimension (the batch) fixed at rows, or left
// symbolic ("batch") when rows is 0: the shape a batched Run (batch.go) feeds.
func specialiseRows(model []byte, rows int64) ([]byte, error) {
	var out []byte
	found := false
	for b := model; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("specialise model: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, fmt.Errorf("specialise model: %w", protowire.ParseError(m))
		}
		if num == modelGraph && typ == protowire.BytesType {
			graph, _ := protowire.ConsumeBytes(b[n:])
			g, ok, err := specialiseGraph(graph, rows)
			if err != nil {
				return nil, err
			}
			found = found || ok
			out = protowire.AppendTag(out, modelGraph, protowire.BytesType)
			out = protowire.AppendBytes(out, g)
		} else {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	if !found {
		return nil, fmt.Errorf("specialise model: no graph input named sr")
	}
	return out, nil
}

func specialiseGraph(graph []byte, rows int64) ([]byte, bool, error) {
	var out []byte
	found := false
	for b := graph; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false, fmt.Errorf("specialise graph: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, false, fmt.Errorf("specialise graph: %w", protowire.ParseError(m))
		}
		field := b[:n+m]
		b = b[n+m:]
		if num != graphInput || typ != protowire.BytesType {
			out = append(out, field...)
			continue
		}
		info, _ := protowire.ConsumeBytes(field[n:])
		switch inputName(info) {
		case "sr":
			found = true
			var t []byte
			t = protowire.AppendTag(t, tensorDataType, protowire.VarintType)
			t = protowire.AppendVarint(t, onnxInt64)
			t = protowire.AppendTag(t, tensorInt64Data, protowire.BytesType)
			t = protowire.AppendBytes(t, protowire.AppendVarint(nil, SampleRate))
			t = protowire.AppendTag(t, tensorName, protowire.BytesType)
			t = protowire.AppendString(t, "sr")
			out = protowire.AppendTag(out, graphInitializer, protowire.BytesType)
			out = protowire.AppendBytes(out, t)
		case "input":
			out = appendInput(out, "input", onnxFloat, rows, contextSamples+WindowSamples)
		default:
			out = append(out, field...)
		}
	}
	return out, found, nil
}

func inputName(info []byte) string {
	for b := info; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		if num == valueInfoName && typ == protowire.BytesType {
			s, _ := protowire.ConsumeString(b[n:])
			return s
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return ""
		}
		b = b[n+m:]
	}
	return ""
}

// appendInput appends a graph input with a fixed tensor shape; a dimension of 0 is symbolic.
func appendInput(out []byte, name string, elem uint64, dims ...int64) []byte {
	var shape []byte
	for _, d := range dims {
		var dim []byte
		if d == 0 {
			dim = protowire.AppendTag(dim, dimParam, protowire.BytesType)
			dim = protowire.AppendString(dim, "batch")
		} else {
			dim = protowire.AppendTag(dim, dimValue, protowire.VarintType)
			dim = protowire.AppendVarint(dim, uint64(d))
		}
		shape = protowire.AppendTag(shape, shapeDim, protowire.BytesType)
		shape = protowire.AppendBytes(shape, dim)
	}
	var tensor []byte
	tensor = protowire.AppendTag(tensor, 1, protowire.VarintType) // TypeProto.Tensor.elem_type
	tensor = protowire.AppendVarint(tensor, elem)
	tensor = protowire.AppendTag(tensor, tensorTypeShape, protowire.BytesType)
	tensor = protowire.AppendBytes(tensor, shape)
	var typ []byte
	typ = protowire.AppendTag(typ, typeTensor, protowire.BytesType)
	typ = protowire.AppendBytes(typ, tensor)
	var info []byte
	info = protowire.AppendTag(info, valueInfoName, protowire.BytesType)
	info = protowire.AppendString(info, name)
	info = protowire.AppendTag(info, valueInfoType, protowire.BytesType)
	info = protowire.AppendBytes(info, typ)
	out = protowire.AppendTag(out, graphInput, protowire.BytesType)
	return protowire.AppendBytes(out, info)
}
