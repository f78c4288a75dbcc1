package warehouse

import "sitewatch/pipeline/model"

// Names the core's vocabulary had while it lived here (pipeline/model owns it now), kept only
// for code other branches change at the same time (pipeline/report, pipeline/changes,
// pipeline/answerlog's tests, cmd/sitewatch/status.go). Remove each once those branches are
// merged and say model.X.
type (
	Raw            = model.Raw
	Charge         = model.Charge
	RunRecord      = model.RunRecord
	QualityFinding = model.QualityFinding
)

// SeverityOK is model.SeverityOK (see above).
const SeverityOK = model.SeverityOK
