// Package tests holds voiced's end-to-end tests: they run the built binary ($VOICED_BIN, which
// `make test` builds first) on the fixture mount and talk to it the way a new user's clients
// would — raw sockets, the OpenAI HTTP shapes, go-openai-realtime and the official openai npm
// package (tests/node). There is no non-test code here.
package tests
