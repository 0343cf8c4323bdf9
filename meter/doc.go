// Package meter keeps seconds heard and spoken per principal, org, door and day, durably (SQLite by default, Postgres for several nodes).
package meter
