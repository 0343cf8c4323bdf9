// Package kokoro runs Kokoro-82M on ONNX Runtime: text normalisation, sentence splitting, grapheme-to-phoneme (lexicon, then espeak-ng), vocab ids, style rows and the waveform.
package kokoro
