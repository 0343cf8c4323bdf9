package kokoro

import "github.com/voiced/voiced/sentence"

// The sentence splitter lives in sentence (pure Go, shared with the conversation);
// these names keep kokoro's callers as they were.

// SplitterOptions shape the pieces a Splitter hands out (sentence.Options).
type SplitterOptions = sentence.Options

// Splitter cuts streamed text into speakable pieces (sentence.Splitter).
type Splitter = sentence.Splitter

// NewSplitter returns an empty splitter.
func NewSplitter(opts SplitterOptions) *Splitter { return sentence.NewSplitter(opts) }

// SplitSentences cuts a whole text into its sentences, trimmed (sentence.Split).
func SplitSentences(text string) []string { return sentence.Split(text) }
