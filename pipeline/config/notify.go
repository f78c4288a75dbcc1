package config

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"sitewatch/pipeline/notify"
)

// decodeNotifyOn reads notify.on, a list of notify.Kinds (`on: [complete, failed]`, or one item
// per line); each unknown value is reported on its own line. An empty list posts nothing.
func (c *Config) decodeNotifyOn(p *problems, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, "notify.on: must be a list of outcomes, e.g. [complete, failed, credits, month_turned] (known: %s)", strings.Join(notify.Kinds, ", "))
		return
	}
	c.Notify.On = []string{}
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode {
			p.add(item.Line, "notify.on: this item is a %s, not an outcome", kindName(item.Kind))
			continue
		}
		if err := notify.CheckOn([]string{item.Value}); err != nil {
			p.add(item.Line, "notify.on: %v", err)
			continue
		}
		c.Notify.On = append(c.Notify.On, item.Value)
	}
}
