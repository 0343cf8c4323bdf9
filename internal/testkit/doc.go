// Package testkit holds what voiced's tests share, so each helper is written once: the
// goroutine-leak check (CheckLeaks, Leaks), the JWT minter (JWT, SignJWT) and a log sink
// several goroutines may write (LogBuffer). Only tests and the load tool (cmd/voiced-bench,
// which mints its principals with SignJWT) import it; the server never does.
package testkit
