// Package mind hears an utterance and answers in streamed text: echo, and any OpenAI-compatible chat completions server, with tools.
package mind
