package session

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
)

// TestRetrieveWaitsForTheWriter: conversation.item.retrieved carries an item's audio (here 1 MiB;
// up to the conversation's 32 MiB); a client asking for it faster than it reads must not fill the
// writer's queue with copies (outQueue of them: 256 x 1.3 MiB of base64 here, GBs with larger
// items). The input goroutine waits for each retrieved event to be written, so while the client
// reads nothing at most two more retrieves are taken in. Before, all 100 were.
func TestRetrieveWaitsForTheWriter(t *testing.T) {
	tr := converseStalling(t, func(event []byte) bool {
		return bytes.Contains(event, []byte(`"conversation.item.retrieved"`))
	})
	tr.event(map[string]any{"type": "conversation.item.create", "item": map[string]any{"id": "item_a", "type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_audio", "transcript": "hi", "audio": base64.StdEncoding.EncodeToString(make([]byte, 1<<20))}}}})
	tr.until("conversation.item.done")
	taken := tr.takenIn(func(i int) []byte {
		b, _ := json.Marshal(map[string]any{"type": "conversation.item.retrieve", "event_id": fmt.Sprint("evt_", i), "item_id": "item_a"})
		return b
	})
	t.Logf("%d of 100 retrieves taken in while the client read nothing", taken)
	if taken > 3 {
		t.Errorf("%d retrieves taken in while the client read nothing: their 1 MiB events wait in the queue; want at most 3", taken)
	}
}
