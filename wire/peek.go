package wire

import "bytes"

// PeekEventID returns a client event's event_id without decoding the event: a refusal of an event
// that is not read (over a byte budget) can still name it. It walks the top-level object's members,
// skipping each value (strings at memchr speed), and returns the last event_id member, as
// encoding/json would, when it is a string without escapes, at most MaxIDBytes long, of printable
// ASCII; otherwise (not an object, malformed, an id it cannot echo as is) "".
func PeekEventID(data []byte) string {
	var id []byte
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ""
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return ""
	}
	for {
		key, next, ok := plainString(data, skipSpace(data, i))
		if !ok {
			return ""
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return ""
		}
		start := skipSpace(data, i+1)
		end, ok := skipValue(data, start)
		if !ok {
			return ""
		}
		if string(key) == "event_id" {
			id = nil
			if v, _, ok := plainString(data, start); ok && len(v) <= MaxIDBytes && printableASCII(v) {
				id = v
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return ""
		}
		if data[i] == '}' {
			return string(id)
		}
		if data[i] != ',' {
			return ""
		}
		i++
	}
}

func printableASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// skipValue returns the index after the JSON value at data[i]. It checks only what it needs to
// find the value's end (strings and brackets), not that the value is valid JSON.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		var depth int
		for i < len(data) {
			switch data[i] {
			case '"':
				next, ok := skipString(data, i)
				if !ok {
					return 0, false
				}
				i = next
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // a number, true, false, null
		start := i
		for ; i < len(data); i++ {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i, i > start
			}
		}
		return i, i > start
	}
}

// skipString returns the index after the JSON string at data[i] (data[i] is its opening quote).
func skipString(data []byte, i int) (int, bool) {
	i++
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		escapes := 0 // a quote after an odd run of backslashes is escaped
		for j := q - 1; j >= i && data[j] == '\\'; j-- {
			escapes++
		}
		if escapes%2 == 0 {
			return q + 1, true
		}
		i = q + 1
	}
}
