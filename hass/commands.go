package hass

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"plantd/config"
	"plantd/gridcontrol"
	"plantd/plant"
)

// Reasons of refused commands: the log lines' reason, and the key (with
// the topic) their rate limit counts under.
const (
	reasonSize        = "too-large"
	reasonRetained    = "retained"
	reasonBusy        = "busy"
	reasonRate        = "rate-limited"
	reasonRole        = "role"
	reasonTarget      = "unknown-target"
	reasonValue       = "bad-value"
	reasonInvalid     = "invalid"
	reasonNotEligible = "not-eligible"
	reasonFailed      = "failed"
)

// origin is the Origin of Home Assistant's commands at grid control: the
// broker connection's client id, the configured role, and a channel of
// its own, so that its windows combine with every other origin's by the
// most restrictive limit (a limit from Home Assistant never loosens a
// grid operator's or an installer's, whatever its role) while a new value
// from Home Assistant replaces its own last one.
func (l *Link) origin() gridcontrol.Origin {
	return gridcontrol.Origin{Door: gridcontrol.DoorHomeAssistant, Name: l.cfg.ClientID, Role: l.cfg.Role,
		Channel: string(gridcontrol.DoorHomeAssistant) + ":" + l.cfg.ClientID}
}

// by names Home Assistant to the consumers (their plant log): as the
// API named the in-process credential, "ha:<clientId>".
func (l *Link) by() string { return string(gridcontrol.DoorHomeAssistant) + ":" + l.cfg.ClientID }

// handle runs one command from Home Assistant with the checks the HTTP
// API applies to its requests, in its order: the credential's rate limit,
// the role (installer or above, as POST schedules and PUT consumer mode
// need), the target, the value; then grid control or the consumers
// decide. It logs the outcome.
func (l *Link) handle(ctx context.Context, m command) {
	if !l.limiter.Allow() {
		l.refuse(m, reasonRate, fmt.Sprintf("too many commands (more than %g/s, burst %d, as the API allows a credential)", l.cfg.CommandRate, l.cfg.CommandBurst))
		return
	}
	if config.RoleRank(l.cfg.Role) < config.RoleRank(config.RoleInstaller) {
		l.refuse(m, reasonRole, fmt.Sprintf("role %s required, Home Assistant's is %s (local.mqtt.role: installer or gridoperator may send commands)",
			config.RoleInstaller, l.cfg.Role))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	p := strings.TrimSpace(string(m.payload))
	switch {
	case m.scope == scopePlant && m.key == keyFeedInLimit:
		l.feedInLimit(ctx, m, p)
	case m.scope == scopeDevice && m.key == keyMode:
		mode, ok := plant.ParseConsumerMode(p)
		if p == string(plant.ModePlan) {
			l.refuse(m, reasonValue, "Plan needs a target and a deadline: PUT /gateway/v1/consumers/{id}/plan")
			return
		}
		if !ok {
			l.refuse(m, reasonValue, "unknown mode (Auto, On or Off)")
			return
		}
		l.setMode(ctx, m, mode)
	case m.scope == scopeDevice && m.key == keySwitch:
		switch strings.ToUpper(p) {
		case "ON":
			l.setMode(ctx, m, plant.ModeOn)
		case "OFF":
			l.setMode(ctx, m, plant.ModeOff)
		default:
			l.refuse(m, reasonValue, "neither ON nor OFF")
		}
	default:
		l.refuse(m, reasonTarget, fmt.Sprintf("no command %s/%s", m.scope, excerpt([]byte(m.key), excerptLen)))
	}
}

// feedInLimit submits a FeedInLimit window of value p % from now for
// Config.LimitWindow to grid control, with the eligibility check on, and
// ends the window the link's last value made for the plant: the number
// holds one value, so one window (the plant's schedules would otherwise
// fill with one per value, each ending a day later than the one before).
func (l *Link) feedInLimit(ctx context.Context, m command, p string) {
	if l.deps.Grid == nil {
		l.refuse(m, reasonTarget, "grid control is not running: no feed-in limit")
		return
	}
	if !l.knownPlant(m.id) {
		l.refuse(m, reasonTarget, "unknown plant")
		return
	}
	v, err := strconv.ParseFloat(p, 64)
	if err != nil {
		l.refuse(m, reasonValue, "not a number (the limit in %, 0..100)")
		return
	}
	sc, err := l.deps.Grid.Submit(ctx, m.id, l.origin(), []gridcontrol.Order{{Command: gridcontrol.CmdFeedInLimit, For: l.cfg.LimitWindow, Value: &v, Unit: "%"}})
	var ve *gridcontrol.ValidationError
	switch {
	case errors.As(err, &ve) && ve.NotEligible:
		l.refuse(m, reasonNotEligible, "the plant's devices cannot carry every command"+fieldsText(ve))
		return
	case errors.As(err, &ve):
		l.refuse(m, reasonInvalid, "invalid schedule"+fieldsText(ve))
		return
	case err != nil:
		l.refuse(m, reasonFailed, fmt.Sprintf("grid control: submit a FeedInLimit of %g %% to plant %s: %v", v, excerpt([]byte(m.id), excerptLen), err))
		return
	}
	if prev := l.held[m.id]; prev != "" && prev != sc.ScheduleID {
		if err := l.deps.Grid.Cancel(ctx, m.id, prev, l.origin()); err != nil && !errors.Is(err, gridcontrol.ErrUnknownSchedule) {
			l.log.Warn("home assistant: the previous FeedInLimit window not ended", "plant", m.id, "schedule", prev, "err", err)
		}
	}
	l.held[m.id] = sc.ScheduleID
	l.accept(m, "schedule", sc.ScheduleID, "createdBy", sc.CreatedBy)
}

// setMode holds a consumer in mode.
func (l *Link) setMode(ctx context.Context, m command, mode plant.ConsumerMode) {
	if l.deps.Consumers == nil {
		l.refuse(m, reasonTarget, "unknown consumer (no consumers)")
		return
	}
	cs, err := l.deps.Consumers.SetMode(ctx, m.id, mode, l.by())
	switch {
	case errors.Is(err, plant.ErrUnknownDevice):
		l.refuse(m, reasonTarget, "unknown consumer")
		return
	case err != nil:
		l.refuse(m, reasonFailed, fmt.Sprintf("set mode of consumer %s to %s: %v", excerpt([]byte(m.id), excerptLen), mode, err))
		return
	}
	l.accept(m, "mode", cs.Mode)
}

// knownPlant reports whether id is a configured plant.
func (l *Link) knownPlant(id string) bool {
	for _, p := range l.deps.Live.Plants() {
		if p.ID == id {
			return true
		}
	}
	return false
}

// fieldsText lists a validation error's fields as the API's problem
// document did ("; field: message"), with the eligibility reason code.
func fieldsText(ve *gridcontrol.ValidationError) string {
	var b strings.Builder
	for _, f := range ve.Fields {
		b.WriteString("; " + f.Field + ": " + f.Message)
		if f.Code != "" {
			b.WriteString(" (" + f.Code + ")")
		}
	}
	return b.String()
}

// refuse logs a refused command, at most once a minute per kind of
// command (commandKind) and reason after the first (with the number
// suppressed since): the command topics are whoever's the broker lets
// publish, with ids of the publisher's making, and a flood of refusals
// must not become a flood of lines.
func (l *Link) refuse(m command, reason, problem string) {
	msg := "home assistant: command refused"
	switch reason {
	case reasonRetained:
		msg = "home assistant: retained command ignored (publish commands without retain)"
	case reasonBusy:
		msg = "home assistant: command dropped, too many waiting"
	}
	l.refused.Log(slog.LevelWarn, l.commandKind(m), reason, msg,
		"problem", problem, "topic", excerpt([]byte(m.topic), topicExcerptLen), "payload", excerpt(m.payload, excerptLen), "size", len(m.payload))
}

// accept logs an accepted command, at most once a minute per topic (a
// configured plant or consumer's: a bounded set) with the number not
// logged since; grid control and the consumers keep their own record of
// every change.
func (l *Link) accept(m command, args ...any) {
	l.accepted.Log(slog.LevelInfo, excerpt([]byte(m.topic), topicExcerptLen), "accepted", "home assistant: command accepted",
		append([]any{"payload", excerpt(m.payload, excerptLen), "size", len(m.payload)}, args...)...)
}

// commandKind is the kind of a command for its log lines' limit: its
// topic with the id as "+" (P/G/device/+/mode/set) for a command the
// link knows, P/G/+/+/+/set for any other.
func (l *Link) commandKind(m command) string {
	switch {
	case m.scope == scopePlant && m.key == keyFeedInLimit,
		m.scope == scopeDevice && (m.key == keyMode || m.key == keySwitch):
		return l.base() + "/" + m.scope + "/+/" + m.key + "/set"
	}
	return l.base() + "/+/+/+/set"
}
