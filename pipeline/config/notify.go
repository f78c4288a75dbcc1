package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The kinds of outcome notify.on selects (several outcomes share one kind); pipeline/notify
// posts by them.
const (
	NotifyOnComplete    = "complete"     // the month is complete
	NotifyOnUpToDate    = "up_to_date"   // a retry found the month still served and complete: nothing new
	NotifyOnFailed      = "failed"       // failed, unauthorized, interrupted, abandoned, month_mismatch
	NotifyOnCredits     = "credits"      // stopped for credits (402, the reserve, the cap)
	NotifyOnMonthTurned = "month_turned" // the API turned to a new month during the run
)

// NotifyKinds are the values notify.on accepts, in the order messages list them.
var NotifyKinds = []string{NotifyOnComplete, NotifyOnUpToDate, NotifyOnFailed, NotifyOnCredits, NotifyOnMonthTurned}

// NotifyDefaultOn is notify.on when the config leaves it out: every outcome a person must act
// on or wants to hear of, but not up_to_date, which `schedule` produces every retry_every while
// the API has not turned (noise in a chat channel).
var NotifyDefaultOn = []string{NotifyOnComplete, NotifyOnFailed, NotifyOnCredits, NotifyOnMonthTurned}

// CheckNotifyOn returns an error naming the first value of on that is not one of NotifyKinds.
func CheckNotifyOn(on []string) error {
	for _, k := range on {
		if !slices.Contains(NotifyKinds, k) {
			return fmt.Errorf("%q is not an outcome to notify on (use %s)", k, strings.Join(NotifyKinds, ", "))
		}
	}
	return nil
}

// decodeNotifyOn reads notify.on, a list of NotifyKinds (`on: [complete, failed]`, or one item
// per line); each unknown value is reported on its own line. An empty list posts nothing.
func (c *Config) decodeNotifyOn(p *problems, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, "notify.on: must be a list of outcomes, e.g. [complete, failed, credits, month_turned] (known: %s)", strings.Join(NotifyKinds, ", "))
		return
	}
	c.Notify.On = []string{}
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode {
			p.add(item.Line, "notify.on: this item is a %s, not an outcome", kindName(item.Kind))
			continue
		}
		if err := CheckNotifyOn([]string{item.Value}); err != nil {
			p.add(item.Line, "notify.on: %v", err)
			continue
		}
		c.Notify.On = append(c.Notify.On, item.Value)
	}
}
