package webhooks

import (
	"testing"
	"time"
)

func TestRetryDelays(t *testing.T) {
	c := Defaults()
	want := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 6 * time.Hour}
	for i, w := range want {
		if got := c.RetryDelay(i + 1); got != w {
			t.Errorf("exponential retry %d after %s, want %s", i+1, got, w)
		}
	}
	c.Backoff = "linear"
	for n := 1; n <= 6; n++ {
		if got := c.RetryDelay(n); got != time.Duration(n)*time.Minute {
			t.Errorf("linear retry %d after %s", n, got)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	if err := Defaults().Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for name, bad := range map[string]func(*Config){
		"backoff":     func(c *Config) { c.Backoff = "fibonacci" },
		"timeout":     func(c *Config) { c.Timeout = 0 },
		"concurrency": func(c *Config) { c.Concurrency = 0 },
		"queue":       func(c *Config) { c.QueueSize = 0 },
		"retries":     func(c *Config) { c.MaxRetries = 1000 },
	} {
		c := Defaults()
		bad(&c)
		if c.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
