package notify

import (
	"fmt"
	"math"
	"strings"
	"time"

	"sitewatch/pipeline/buildinfo"
	"sitewatch/pipeline/textout"
)

// payload is the JSON body. `text` is what Slack and Mattermost incoming webhooks show; the
// other fields are for receivers that parse (both chat services ignore them).
type payload struct {
	Text            string  `json:"text"`
	RunID           string  `json:"run_id"`
	Month           string  `json:"month"`
	Outcome         string  `json:"outcome"`
	MonthState      string  `json:"month_state,omitempty"`
	Loaded          int     `json:"loaded"`
	Total           int     `json:"total"`
	CreditsSpent    int64   `json:"credits_spent"`
	CreditsLeft     *int64  `json:"credits_left"` // null when unknown
	PaidBy          string  `json:"paid_by,omitempty"`
	DurationSeconds float64 `json:"duration_seconds"`
	FirstError      string  `json:"first_error,omitempty"`
	// NeedsAttention is the month's needs-attention list as objects (MaxAttentionRows at
	// most; NeedsAttentionTotal counts them all): [] for a quiet month, absent when the
	// outcome carries no list.
	NeedsAttention      *[]AttentionRow `json:"needs_attention,omitempty"`
	NeedsAttentionTotal *int            `json:"needs_attention_total,omitempty"`
	Changes             string          `json:"changes,omitempty"`
	Skipped             string          `json:"skipped,omitempty"`
	Host                string          `json:"host,omitempty"`
	Version             string          `json:"sitewatch_version"` // buildinfo.Version, as manifests and --version

	Added []string `json:"added,omitempty"` // domains `schedule` appended to the watchlist (discover:)
}

func newPayload(e Event) payload {
	p := payload{
		Text: slackEscape.Replace(Text(e)), RunID: e.RunID, Month: e.Month, Outcome: e.Outcome, MonthState: e.MonthState, Loaded: e.Loaded, Total: e.Total,
		CreditsSpent: e.CreditsSpent, DurationSeconds: math.Round(e.Duration.Seconds()*1000) / 1000,
		FirstError: e.FirstError, Changes: e.Changes, Skipped: e.Skipped, Host: e.Host, Version: buildinfo.Version(), PaidBy: e.PaidBy,
	}
	if e.CreditsLeft >= 0 {
		left := e.CreditsLeft
		p.CreditsLeft = &left
	}
	p.Added = e.Added
	if e.AttentionRows != nil {
		rows := e.AttentionRows[:min(len(e.AttentionRows), MaxAttentionRows)]
		total := e.AttentionTotal
		p.NeedsAttention, p.NeedsAttentionTotal = &rows, &total
	}
	return p
}

// AttentionRow is one row of the needs_attention view as the webhook sends it: the same
// fields, units and words as the view (value and previous in the metric's unit: whole visits,
// a rank, percent of visits for a channel share).
type AttentionRow struct {
	Domain   string   `json:"domain"`
	Kind     string   `json:"kind"`
	Metric   string   `json:"metric,omitempty"`  // visits | global_rank | ai_visits | channel_share
	Channel  string   `json:"channel,omitempty"` // channel_share only
	Value    *float64 `json:"value"`             // null when missing
	Previous *float64 `json:"previous"`
	Z        *float64 `json:"z"` // null for vanished, data_missing, quality_failed
	Severity string   `json:"severity"`
	Reason   string   `json:"reason"`
}

// MaxAttentionRows bounds the rows a payload carries, so a month of 100,000 domains posts a
// bounded body; needs_attention_total says how many the list holds.
const MaxAttentionRows = 50

// slackEscape escapes what Slack's message format treats as markup (a rejected watchlist entry
// such as "<b>x</b>" in first_error would otherwise turn into a link or vanish); Mattermost
// renders the entities as the characters.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// headlines say what an outcome means to the reader of a chat channel.
var headlines = map[string]string{
	OutcomeComplete:       "complete",
	OutcomeUpToDate:       "up to date (the API still serves this month; nothing new to load)",
	OutcomeStoppedCredits: "stopped for credits (top up, the next run resumes)",
	OutcomeUnauthorized:   "failed: the API rejected the key (check ATLAS_API_KEY)",
	OutcomeFailed:         "failed (the next run resumes)",
	OutcomeInterrupted:    "interrupted (the next run resumes)",
	OutcomeAbandoned:      "abandoned: the run's process died (the next run resumes)",
	OutcomeMonthTurned:    "the API turned to a new month during the run (the next run completes it)",
	OutcomeMonthMismatch:  "not loaded: the API serves another month",
}

// Text is the one-line message of e, as the `text` field carries it, e.g.
// "sitewatch 2026-11: complete — 28/28 domains, 57 credits spent, 443 left, 21s (run r-…)".
func Text(e Event) string {
	head, ok := headlines[e.Outcome]
	if !ok {
		head = e.Outcome
	}
	month := e.Month
	if month == "" {
		month = "(month not known)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sitewatch %s: %s", month, head)
	if e.MonthState != "" {
		fmt.Fprintf(&b, "; %s", e.MonthState)
	}
	fmt.Fprintf(&b, " — %d/%s, %s spent", e.Loaded, textout.Plural(e.Total, "domain", "domains"), textout.Plural(e.CreditsSpent, "credit", "credits"))
	if e.PaidBy != "" {
		fmt.Fprintf(&b, " (%s)", e.PaidBy)
	}
	if e.CreditsLeft >= 0 {
		fmt.Fprintf(&b, ", %d left", e.CreditsLeft)
	}
	fmt.Fprintf(&b, ", %s", e.Duration.Round(time.Second))
	if e.RunID != "" {
		fmt.Fprintf(&b, " (run %s", e.RunID)
		if e.Host != "" {
			fmt.Fprintf(&b, " on %s", e.Host)
		}
		b.WriteString(")")
	}
	if e.Attention != "" {
		fmt.Fprintf(&b, "\n%s", e.Attention)
	}
	if e.Changes != "" {
		fmt.Fprintf(&b, "\nchanges: %s", e.Changes)
	}
	if e.Skipped != "" {
		fmt.Fprintf(&b, "\n%s", e.Skipped)
	}
	if len(e.Added) > 0 {
		fmt.Fprintf(&b, "\nwatchlist grown by discover: %s added (%s); the next month's run fetches them; discovered domains now cost %d credits a month",
			strings.Join(e.Added, ", "), textout.Plural(len(e.Added), "domain", "domains"), e.AddedMonthly)
	}
	if e.FirstError != "" {
		fmt.Fprintf(&b, "\nfirst error: %s", e.FirstError)
	}
	return b.String()
}
