package main

import (
	"fmt"
	"testing"
)

func TestOriginHosts(t *testing.T) {
	got := originHosts([]string{"https://app.example.com", "*.example.com", "http://localhost:3000"})
	if fmt.Sprint(got) != "[app.example.com *.example.com localhost:3000]" {
		t.Fatalf("originHosts = %v", got)
	}
}
