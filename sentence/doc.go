// Package sentence cuts text into speakable pieces: whole sentences (Split), or text that arrives
// a few characters at a time, such as a language model's reply (Splitter). Pure Go, no model: the
// Kokoro engine and the conversation both use it.
package sentence
