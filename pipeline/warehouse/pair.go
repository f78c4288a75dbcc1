package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"sitewatch/pipeline/model"
	"sitewatch/schema"
)

// errIndexGone asks Store to read the pair states again (a failed commit dropped them).
var errIndexGone = errors.New("pair index dropped")

// needPartner asks Store to read the other body of a domain back from the database.
type needPartner struct{ endpoint schema.Endpoint }

func (needPartner) Error() string { return "partner body needed" }

// enqueue adds one decoded answer to the pending batch, retrying after the commits or reads
// that add asks for. It returns add's body error (an *UnloadableError) or a storage error.
func (w *Warehouse) enqueue(ctx context.Context, snapshot string, raw model.Raw, row rawRow) error {
	for range 4 {
		if raw.Endpoint != schema.EndpointCountries {
			if err := w.ensureIndex(ctx, snapshot); err != nil {
				return err
			}
		}
		var bodyErr error
		err := w.write(ctx, func(b *batch) error {
			var err error
			bodyErr, err = w.add(b, snapshot, raw, row)
			return err
		})
		var np needPartner
		switch {
		case errors.Is(err, errIndexGone):
			continue
		case errors.As(err, &np):
			if err := w.loadPartner(ctx, snapshot, raw.Domain, np.endpoint); err != nil {
				return err
			}
			continue
		}
		if bodyErr != nil {
			return bodyErr
		}
		return err
	}
	return fmt.Errorf("store %s %s: the pending batch kept changing; retry", raw.Domain, raw.Endpoint)
}

// add puts one answer into b: its raw row, its ledger row, and the domain's derived rows when
// its pair is complete. It changes nothing when it returns errFlushFirst, errIndexGone or
// needPartner. bodyErr is an *UnloadableError when the pair cannot be flattened.
func (w *Warehouse) add(b *batch, snapshot string, raw model.Raw, row rawRow) (bodyErr, err error) {
	key := row.rawKey
	if b.pending[key] {
		return nil, errFlushFirst // the same row is pending: commit it before replacing it
	}
	if raw.Endpoint == schema.EndpointCountries {
		if b.countries != nil {
			return nil, errFlushFirst
		}
		b.touch()
		b.deleteRaw = append(b.deleteRaw, key) // at most one row, and no index: always delete
		b.countries = raw.Countries
		b.addRaw(row)
		b.addChargeOf(snapshot, raw, model.OutcomeStored)
		return nil, nil
	}
	idx := w.index[snapshot]
	if idx == nil {
		return nil, errIndexGone
	}
	st := idx[raw.Domain]
	dk := domainKey{snapshot, raw.Domain}
	halves := w.waiting[dk]
	e := pairIndex(raw.Endpoint)
	o := 1 - e
	run := w.runRefs.ref(raw.RunID)
	stale := raw.Refresh && st.stored(o) && st.run(o) != run
	partner := rawKey{snapshot, raw.Domain, schema.DomainEndpoints[o]}
	if b.pending[partner] && (stale || !halves.has(o)) {
		return nil, errFlushFirst
	}
	if st.stored(o) && !stale && !halves.has(o) && halves.err() == nil {
		return nil, needPartner{schema.DomainEndpoints[o]}
	}
	// From here on, b changes.
	b.touch()
	if st.stored(e) {
		b.deleteRaw = append(b.deleteRaw, key)
	}
	if st.stored(0) && st.stored(1) {
		b.clear = append(b.clear, dk) // its rows may exist
	}
	if stale {
		// A refresh pairs only bodies of the same run: the older partner goes, and the domain
		// loads when the partner of this run arrives.
		b.deleteRaw = append(b.deleteRaw, partner)
		st = st.without(o)
		w.forget(dk)
	}
	st = st.with(e, run)
	idx[raw.Domain] = st
	outcome := model.OutcomeStored
	if st.stored(o) {
		if bodyErr = w.addPair(b, dk, raw); bodyErr != nil {
			outcome = model.OutcomeUnloadable
		}
	} else {
		w.hold(dk, e, raw.Overview, raw.Similar, raw.FetchedAt)
	}
	b.addRaw(row)
	b.addChargeOf(snapshot, raw, outcome)
	return bodyErr, nil
}

// addPair flattens the domain's two bodies, raw's and the held partner, into b's rows and
// releases the partner from memory. raw's body is used directly, never held: a completed
// pair takes no room among the halves (and at their bound a held body can give way).
func (w *Warehouse) addPair(b *batch, dk domainKey, raw model.Raw) error {
	var held pairHalves
	if h := w.waiting[dk]; h != nil {
		held = *h
	}
	if pairIndex(raw.Endpoint) == 0 {
		held.overview, held.ovFetched = raw.Overview, raw.FetchedAt.UTC()
	} else {
		held.similar = raw.Similar
	}
	w.forget(dk)
	err := held.partnerErr
	if err == nil {
		err = b.rows.Add(dk.snapshot, dk.domain, held.ovFetched, held.overview, held.similar)
	}
	if err != nil {
		// Keep the paid-for bodies (so no run refetches them) but no rows: the domain is
		// "stored, not loaded" until a fixed sitewatch rebuilds it.
		b.clear = append(b.clear, dk)
		return &UnloadableError{Domain: dk.domain, Err: err}
	}
	b.rowDomains++
	return nil
}

// hold keeps the decoded body i of a pair while it waits for its partner; a nil body (one
// that did not decode) is not kept. At w.maxHalves the pairs that have waited longest make
// room: their partner, if it ever arrives, reads them back.
func (w *Warehouse) hold(dk domainKey, i int, ov *schema.SiteOverview, sim *schema.SiteSimilar, fetched time.Time) {
	if (i == 0 && ov == nil) || (i == 1 && sim == nil) {
		return
	}
	if !w.waiting[dk].has(i) {
		w.makeRoom(dk)
		w.halves++
	}
	h := w.waitingPair(dk)
	if i == 0 {
		h.overview, h.ovFetched = ov, fetched.UTC()
	} else {
		h.similar = sim
	}
}

// waitingPair is dk's entry in waiting, created (last in the wait order) if it has none.
func (w *Warehouse) waitingPair(dk domainKey) *pairHalves {
	if h := w.waiting[dk]; h != nil {
		return h
	}
	w.waitSeq++
	h := &pairHalves{seq: w.waitSeq}
	w.waiting[dk] = h
	w.waitOrder = append(w.waitOrder, waitEntry{dk, h.seq})
	return h
}

// forget drops what dk's pair holds in memory: its halves and its partner's decode error.
func (w *Warehouse) forget(dk domainKey) {
	h := w.waiting[dk]
	for i := range 2 {
		if h.has(i) {
			w.halves--
		}
	}
	delete(w.waiting, dk)
}

// waitEntry is a pair's place in the order pairs began waiting; seq tells a pair that left
// and came back from its earlier entry.
type waitEntry struct {
	dk  domainKey
	seq uint64
}

// makeRoom forgets the halves of the pairs that have waited longest, other than keep, until
// one more half fits. Pairs whose partner never comes (an endpoint failing for many domains)
// so give way to new ones instead of sending every later pair to the database.
func (w *Warehouse) makeRoom(keep domainKey) {
	for w.halves >= w.maxHalves && len(w.waitOrder) > 0 {
		e := w.waitOrder[0]
		w.waitOrder = w.waitOrder[1:]
		h := w.waiting[e.dk]
		if h == nil || h.seq != e.seq || e.dk == keep {
			continue
		}
		w.forget(e.dk) // a partnerErr goes too: a read-back finds it again
	}
	if len(w.waitOrder) > 2*len(w.waiting)+64 {
		// Most entries are of pairs that completed: keep the live ones, in order.
		live := make([]waitEntry, 0, len(w.waiting))
		for _, e := range w.waitOrder {
			if h := w.waiting[e.dk]; h != nil && h.seq == e.seq {
				live = append(live, e)
			}
		}
		w.waitOrder = live
	}
}

func (b *batch) addRaw(r rawRow) {
	b.raws = append(b.raws, r)
	b.pending[r.rawKey] = true
}

func (b *batch) addChargeOf(snapshot string, raw model.Raw, outcome string) {
	if raw.RunID != "" {
		b.addCharge(chargeOf(snapshot, raw, outcome))
	}
}

// loadPartner reads a domain's committed body of endpoint back from raw_responses, decodes it
// and keeps it as the pair's half, for a pair completed across processes (a resumed run).
func (w *Warehouse) loadPartner(ctx context.Context, snapshot, domain string, endpoint schema.Endpoint) error {
	w.flushQuietly()
	var stored []byte
	var encoding string
	var fetched time.Time
	err := w.db.QueryRowContext(ctx, `SELECT body, body_encoding, fetched_at FROM raw_responses WHERE snapshot_month = ? AND domain = ? AND endpoint = ?`,
		snapshot, domain, string(endpoint)).Scan(&stored, &encoding, &fetched)
	if errors.Is(err, sql.ErrNoRows) {
		w.dropIndex() // the index was wrong about it; read it again
		return nil
	}
	if err != nil {
		return fmt.Errorf("read stored %s response of %s: %w", endpoint, domain, err)
	}
	body, err := decompressBody(stored, encoding)
	if err != nil {
		return fmt.Errorf("stored %s response of %s: %w", endpoint, domain, err)
	}
	partner := model.Raw{Endpoint: endpoint, Domain: domain, Body: body}
	decodeErr := decodeRaw(&partner)
	w.pmu.Lock()
	defer w.pmu.Unlock()
	if _, ok := w.index[snapshot][domain]; ok {
		// A stored partner that no longer decodes makes the pair unloadable, not the answer
		// that arrives refused: that one is paid for and fine.
		dk := domainKey{snapshot, domain}
		if decodeErr != nil {
			w.waitingPair(dk).partnerErr = decodeErr
		} else {
			w.hold(dk, pairIndex(endpoint), partner.Overview, partner.Similar, fetched)
		}
	}
	return nil
}
