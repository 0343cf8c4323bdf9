// Package whisper runs Whisper (Optimum's encoder + merged decoder export) on ONNX Runtime: log-mel features, greedy decoding with the KV cache, and byte-level BPE detokenisation.
package whisper
