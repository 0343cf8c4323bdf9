// Package wire is the server side of the OpenAI Realtime protocol (beta and GA): it decodes client events and encodes server events, filling what go-openai-realtime lacks.
package wire
