// Package session owns tickets, the realtime socket and one conversation's state machine: the handshake, the reply, barge-in.
package session
