// Package testkit holds what voiced's tests share, so each helper is written once: the
// goroutine-leak check (CheckLeaks, Leaks), the JWT minter (JWT, SignJWT) and a log sink
// several goroutines may write (LogBuffer). Tests only: no production package imports it
// (cmd/voiced-bench, the load tool, mints its principals with SignJWT).
package testkit
