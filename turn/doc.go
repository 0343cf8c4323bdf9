// Package turn decides who holds the floor: Hush (silence only, server_vad) and a semantic detector (semantic_vad).
package turn
