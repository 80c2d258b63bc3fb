-- mod_apush_bridge: tells an apush component who a push is for and what caused it.
--
-- Loaded on a VirtualHost next to mod_cloud_notify (XEP-0357). It
--   * reports registrations made and removed towards the component (<registered>/<unregistered>),
--     and forgets one the component answers with an error,
--   * refuses an <enable/> towards a push service that is not allowed, towards another JID of the
--     component's domain, or towards the component without a publish-options form, and one whose
--     token or form is larger than any real one, whatever the service,
--   * adds <account/> and a stripped <forwarded/> copy of the triggering stanza (no text, at most
--     16 KiB: apush_bridge_strip.lib.lua) to every push to the component,
--   * pushes reads (the account read or answered a chat on another device) to the account's
--     registrations at the component that have no live or hibernated session,
--   * reports deleted accounts (<unregistered/>) and tells the component which accounts exist,
--   * reports, for accounts with a registration at the component, whether each of their sessions
--     without push is available (<presence/>: its `show` only) and that the account was active on one
--     (<active/>, at most once per account every apush_bridge_activity_interval seconds),
--   * keeps every publish to the component until it is answered, and replays one that was bounced,
--     answered `wait` for a store fault, or not answered, once the component is connected (bounded).
-- Runs unchanged on Prosody 0.12 and 13.0 (both tested): no hook or API it uses differs between them.
-- Wire format: contrib/prosody/README.md. MIT licensed, part of apush-component.

local st = require "util.stanza";
local jid = require "util.jid";
local hashes = require "util.hashes";
local usermanager = require "core.usermanager";
local modulemanager = require "core.modulemanager";
local now = require "util.time".now;

local xmlns_bridge = "urn:xmpp:apush:bridge:0";
local xmlns_push = "urn:xmpp:push:0";
local xmlns_forward = "urn:xmpp:forward:0";
local xmlns_markers = "urn:xmpp:chat-markers:0";
local xmlns_mds = "urn:xmpp:mds:displayed:0";
local xmlns_pubsub_event = "http://jabber.org/protocol/pubsub#event";
local xmlns_data = "jabber:x:data";
local xmlns_chatstates = "http://jabber.org/protocol/chatstates";

local strip = module:require("apush_bridge_strip");

-- Registrations, pushes and pings all live in mod_cloud_notify; this module only adds to them.
module:depends("cloud_notify");

local host = module.host;
local component = jid.prep(module:get_option_string("apush_bridge_component") or "");
local allowed_services = require "util.set".new();
for _, service in ipairs(module:get_option_array("apush_bridge_allowed_services", {})) do
	allowed_services:add(jid.prep(service) or service);
end
-- Same store name as mod_cloud_notify's module:open_store(): it flushes every change at once.
local registration_store = module:open_store("cloud_notify");
local host_sessions = prosody.hosts[host].sessions;
local full_sessions = prosody.full_sessions;
-- The largest token and publish-options form a client may enable push with: a real one is a few
-- hundred bytes (the component refuses tokens over 2048 bytes).
local max_token_bytes, max_options_bytes = 2048, 4096;
-- The most accounts the component may ask about at once.
local max_accounts_asked = 100;
-- Past this many bytes a forwarded copy is left out and the push names only the account.
local forwarded_limit = module:get_option_number("apush_bridge_forwarded_limit", strip.default_limit, 1024);

if not component then
	module:log("error", "apush_bridge_component is not set: nothing will be bridged");
end

local function is_allowed(service)
	service = jid.prep(service) or service;
	-- The component is always allowed: listing other services must not lock out the bridge's own.
	return allowed_services:empty() or allowed_services:contains(service) or service == component;
end

local function send_to_component(payload)
	module:send(st.message({ from = host, to = component, type = "normal" }):add_child(payload));
end

-- <unregistered/> of the account's registrations at the component with this token, or of all of them.
local function unregistered(username, token)
	return st.stanza("unregistered", { xmlns = xmlns_bridge; account = jid.join(username, host) })
		:tag("disable", { xmlns = xmlns_push, jid = component, node = token }):up();
end

-- A token as a log line may name it: the component's own fingerprint (8 hex digits of its SHA-256).
local function fingerprint(token)
	return "#"..hashes.sha256(token, true):sub(1, 8);
end

-- Removes the account's registrations towards the component with this token (all of them without
-- one) from mod_cloud_notify. It reads them from a cache of its own, which a write to its store
-- would not change, so its own <disable/> handler removes them, for a session made up for it that
-- answers into nothing and logs nothing (its lines name the token). The sessions that hold one
-- stop pushing to it, as after a disable of their own.
local function forget_registrations(username, token)
	local disable = st.iq({ type = "set", from = jid.join(username, host), id = "apush-bridge" })
		:tag("disable", { xmlns = xmlns_push, jid = component, node = token }):up();
	local origin = { type = "apush_bridge", username = username, host = host, log = function () end, send = function () end };
	module:fire_event("iq-set/self/"..xmlns_push..":disable", { origin = origin, stanza = disable });
	local user = host_sessions[username];
	for _, session in pairs(user and user.sessions or {}) do
		local settings = session.push_settings;
		if settings and settings.jid == component and (token == nil or settings.node == token) then
			session.push_identifier, session.push_settings, session.first_hibernated_push = nil, nil, nil;
		end
	end
end

-- With push_notification_with_body, mod_cloud_notify puts the message's text into the summary
-- form. The component only needs to know there is one: it gets the dummy text instead.
local function without_body_text(payload)
	local form = payload:get_child("x", xmlns_data);
	if not form then return; end
	for field in form:childtags("field") do
		local value = field.attr.var == "last-message-body" and field:get_child("value");
		if value and value[1] then
			value[1] = "New Message!";
		end
	end
end

-- 1. Registrations ---------------------------------------------------------------------------

-- What a client writes into <enable/> travels with every push the server makes for it, whatever
-- service it names: a token or a form larger than any real one would make each publish as large
-- (the component refuses it anyway). Measured as the server sends them: escaped.
local function is_oversized(push_info)
	return #st.xml_escape(push_info.node or "") > max_token_bytes
		or (push_info.options ~= nil and #tostring(st.deserialize(push_info.options)) > max_options_bytes);
end

-- Runs late so that another module may veto or redirect the registration (edit push_info) first.
module:hook("cloud_notify/registration", function (event)
	local origin, stanza, push_info = event.origin, event.stanza, event.push_info;
	local function refuse(kind, condition, text)
		module:log("info", "Refusing push registration of %s towards %s: %s", origin.full_jid, push_info.jid, text);
		origin.send(st.error_reply(stanza, kind, condition, text));
		return false;
	end
	-- Every JID of the component's domain reaches the component: one the bridge did not recognise
	-- would be stored and pushed to without its caps and its enrichment.
	local node, domain, resource = jid.prepped_split(push_info.jid);
	local towards_component = component ~= nil and domain == component;
	if towards_component and (node or resource) then
		return refuse("modify", "not-acceptable", "Push notifications go to the component's own JID, "..component);
	elseif towards_component then
		push_info.jid = component; -- another case of it: stored, pushed to and reported as the JID itself
	end
	if not is_allowed(push_info.jid) then
		return refuse("cancel", "not-allowed", "This push service is not allowed here");
	end
	if is_oversized(push_info) then
		return refuse("modify", "not-acceptable", "The push token or its options are too large");
	end
	if not towards_component then return; end
	-- The form carries the device's key: without one the component could push nothing for it.
	if not push_info.options then
		return refuse("modify", "not-acceptable", "Push notifications to this service need a publish-options form");
	end

	send_to_component(st.stanza("registered", {
		xmlns = xmlns_bridge;
		account = jid.join(origin.username, host);
		resource = push_info.resource;
		client_id = push_info.client_id;
	}):tag("enable", { xmlns = xmlns_push, jid = push_info.jid, node = push_info.node })
		:add_child(st.deserialize(push_info.options)):up());
end, -100);

-- mod_cloud_notify fires no event on <disable/>: look at it first and let it through (return nil).
module:hook("iq-set/self/"..xmlns_push..":disable", function (event)
	local origin, disable = event.origin, event.stanza.tags[1];
	-- Compared as cloud_notify stores it: prepped, so a disable written in another case still counts.
	local service = disable.attr.jid and jid.prep(disable.attr.jid);
	-- A client's only: the bridge's own (forget_registrations) tells the component nothing it does not know.
	if not component or service ~= component or origin.type ~= "c2s" or not origin.username then return; end
	send_to_component(unregistered(origin.username, disable.attr.node));
end, 10);

-- The component answers a <registered/> it cannot use (say, its form names no push module) with an
-- error message that echoes it: the server forgets that registration too, rather than push to it
-- in vain. A `wait` error (the component's store is away) says nothing about the registration.
module:hook("message/host", function (event)
	local stanza = event.stanza;
	local registered = stanza.attr.type == "error" and stanza:get_child("registered", xmlns_bridge);
	if not registered then return; end
	if not component or jid.prep(stanza.attr.from or "") ~= component then return true; end
	local error_type, condition, text = stanza:get_error();
	local username, account_host, resource = jid.prepped_split(registered.attr.account or "");
	local enable = registered:get_child("enable", xmlns_push);
	local token = enable and enable.attr.node;
	if error_type == "wait" or not username or account_host ~= host or resource or not token then return true; end
	module:log("info", "The component refused push registration %s of %s@%s (%s: %s): removing it",
		fingerprint(token), username, host, tostring(condition), tostring(text));
	forget_registrations(username, token);
	return true;
end);

-- 2a. Replay -----------------------------------------------------------------------------------

-- mod_cloud_notify sends each publish once: one bounced (the component is not connected), one
-- written into a connection that died, or one answered `wait` for a store fault would be lost.
-- The bridge keeps its copy until the component answers `result` or a final error, and sends it
-- again, with the same id, once the component is connected. The component deduplicates a message
-- by its forwarded copy's sender and id, which the copy keeps, so a replay of one it took pushes
-- nothing twice. Bounded by count, bytes and age; what is dropped is logged and counted.
local replay_max_count = module:get_option_number("apush_bridge_replay_max_count", 1000, 0);
local replay_max_bytes = module:get_option_number("apush_bridge_replay_max_bytes", 4 * 1024 * 1024, 0);
-- A push older than this is no longer worth waking a phone for.
local replay_max_age = module:get_option_number("apush_bridge_replay_max_age", 300, 1);
-- No answer within this long: the connection it was written into died.
local answer_timeout = module:get_option_number("apush_bridge_answer_timeout", 30, 1);
local replays_per_tick, tick_seconds = 10, 1;
-- `wait` conditions that mean "not now": the store is away, or Prosody bounced it (not connected).
local retried_conditions = { ["resource-constraint"] = true, ["internal-server-error"] = true, ["remote-server-timeout"] = true };

local unanswered, unanswered_bytes = {}, 0; -- oldest first: { id, stanza, bytes, kept_at, sent_at }
local replay_counts = { dropped_full = 0, dropped_aged = 0, replayed = 0 };
local replay_measure = {};
for name in pairs(replay_counts) do
	local ok, measure = pcall(module.measure, module, "replay_"..name, "rate");
	replay_measure[name] = ok and measure or function () end;
end
local function count(name)
	replay_counts[name] = replay_counts[name] + 1;
	replay_measure[name]();
end

local on_answer;
local function forget(index)
	local entry = table.remove(unanswered, index);
	unanswered_bytes = unanswered_bytes - entry.bytes;
	module:unhook("iq-result/host/"..entry.id, on_answer);
	module:unhook("iq-error/host/"..entry.id, on_answer);
	return entry;
end

local function index_of(id)
	for index, entry in ipairs(unanswered) do
		if entry.id == id then return index; end
	end
end

function on_answer(event)
	local stanza = event.stanza;
	if jid.prep(stanza.attr.from or "") ~= component then return; end
	local index = index_of(stanza.attr.id);
	if not index then return; end
	local error_type, condition = stanza:get_error();
	if stanza.attr.type == "error" and error_type == "wait" and retried_conditions[condition] then
		unanswered[index].sent_at = nil; -- due again once the component is connected
		module:log("debug", "Push %s answered wait/%s: kept for replay", stanza.attr.id, condition);
	else
		forget(index);
	end
	-- Not handled: mod_cloud_notify's own handlers see the answer as before.
end

local function drop_oldest(reason, counter)
	local entry = forget(1);
	count(counter);
	module:log("warn", "Dropped push %s from the replay queue (%s); %d dropped so far",
		entry.id, reason, replay_counts.dropped_full + replay_counts.dropped_aged);
end

local ticking, start_ticking = false, nil;

local function keep_until_answered(stanza)
	if not component or replay_max_count == 0 then return; end
	local id = stanza.attr.id;
	local copy = st.clone(stanza);
	local bytes = #tostring(copy);
	unanswered[#unanswered + 1] = { id = id, stanza = copy, bytes = bytes, kept_at = now(), sent_at = now() };
	unanswered_bytes = unanswered_bytes + bytes;
	module:hook("iq-result/host/"..id, on_answer, 10);
	module:hook("iq-error/host/"..id, on_answer, 10);
	while #unanswered > replay_max_count or (unanswered_bytes > replay_max_bytes and #unanswered > 0) do
		drop_oldest("full", "dropped_full");
	end
	start_ticking();
end

local function component_connected()
	local environment = modulemanager.get_module(component, "component");
	return environment ~= nil and environment.connected == true;
end

local function replay_tick()
	local ok, err = pcall(function ()
		local at = now();
		while unanswered[1] and at - unanswered[1].kept_at > replay_max_age do
			drop_oldest("older than "..replay_max_age.." s", "dropped_aged");
		end
		for _, entry in ipairs(unanswered) do
			if entry.sent_at and at - entry.sent_at > answer_timeout then entry.sent_at = nil; end
		end
		if not component_connected() then return; end
		local due = {};
		for _, entry in ipairs(unanswered) do
			if #due == replays_per_tick then break; end
			if not entry.sent_at then due[#due + 1] = entry; end
		end
		for _, entry in ipairs(due) do
			entry.sent_at = at;
			count("replayed");
			module:log("info", "Replaying push %s to %s (%d kept)", entry.id, component, #unanswered);
			module:send(st.clone(entry.stanza));
		end
	end);
	if not ok then module:log("error", "Replay failed: %s", tostring(err)); end
	-- The timer runs only while something is kept: a server with nothing unanswered does no work for it.
	if unanswered[1] then return tick_seconds; end
	ticking = false;
end

function start_ticking()
	if ticking then return; end
	ticking = true;
	module:add_timer(tick_seconds, replay_tick);
end

-- 2. Pushes ------------------------------------------------------------------------------------

-- The read being pushed through mod_cloud_notify's 'cloud-notify-ping' right now, if any. The ping
-- carries no stanza; it runs synchronously, so the push handler below picks the read up from here.
local pending_read;

module:hook("cloud_notify/push", function (event)
	if event.push_info.jid ~= component then return; end
	local original = event.original_stanza or pending_read;
	local payload = event.notification_payload;
	local copy = original and strip.stripped(original, forwarded_limit);
	if original and not copy and original.name == "message" then
		module:log("debug", "A push for %s@%s carries no copy: it would be over %d bytes", event.username, host, forwarded_limit);
	end
	-- The body is stripped from the copy, so a mention by name is found here.
	local body = original and original.name == "message" and original:get_child_text("body");
	payload:tag("account", {
		xmlns = xmlns_bridge;
		jid = jid.join(event.username, host);
		important = event.important and "true" or "false";
		mention = strip.names(event.username, body) and "true" or nil;
	}):up();
	if copy then
		payload:tag("forwarded", { xmlns = xmlns_forward }):add_child(copy):up();
	end
	without_body_text(payload);
end);

-- Last, so that a push another handler blocks is not kept (and sent by a replay) either; the copy is
-- kept as sent (enriched, same id). A failure here must not stop the push.
module:hook("cloud_notify/push", function (event)
	if event.push_info.jid ~= component then return; end
	local ok, err = pcall(keep_until_answered, event.notification_stanza);
	if not ok then module:log("error", "Could not keep a push for replay: %s", tostring(err)); end
end, -1000);

-- 3. Reads for fully offline devices -------------------------------------------------------------

-- The account's registrations at the component that no session (live or hibernated) holds.
local function offline_registrations(username)
	local registrations = registration_store:get(username);
	if not registrations then return nil; end
	local held = {};
	local user = host_sessions[username];
	for _, session in pairs(user and user.sessions or {}) do
		if session.push_identifier then held[session.push_identifier] = true; end
	end
	local offline, any = {}, false;
	for identifier, push_info in pairs(registrations) do
		if push_info.jid == component and not held[identifier] then
			offline[identifier] = push_info;
			any = true;
		end
	end
	return any and offline or nil;
end

local function push_read(username, stanza)
	local registrations = offline_registrations(username);
	if not registrations then return; end
	module:log("debug", "Pushing a read of %s@%s", username, host);
	pending_read = stanza;
	-- A failing handler must not leave the read attached to later pings.
	local ok, err = pcall(module.fire_event, module, "cloud-notify-ping", { user = username, push_services = registrations });
	pending_read = nil;
	if not ok then module:log("error", "Read push failed: %s", tostring(err)); end
end

-- Reading or answering a chat: the account's own message with a body or a displayed marker.
local function is_read(stanza)
	local kind = stanza.attr.type;
	if kind == "error" or kind == "headline" then return false; end
	local body = stanza:get_child_text("body");
	return (body ~= nil and body ~= "") or stanza:get_child("displayed", xmlns_markers) ~= nil;
end

local note_activity; -- 5.

local function outgoing_message(event)
	local origin, stanza = event.origin, event.stanza;
	if origin.type ~= "c2s" or not origin.username or event.to_self then return; end
	local to = stanza.attr.to;
	if not to or jid.bare(to) == jid.join(origin.username, host) then return; end
	if is_read(stanza) then push_read(origin.username, stanza); end
	note_activity(origin, stanza);
end

-- Late, so that a stanza another handler drops (blocked, rejected) is not taken as a read.
module:hook("pre-message/bare", outgoing_message, -100);
module:hook("pre-message/full", outgoing_message, -100);
module:hook("pre-message/host", outgoing_message, -100);

-- XEP-0490: a displayed marker published to the account's own PEP node. The push carries the PEP
-- event message its own devices receive (item id = the chat).
local function mds_published(event)
	local username = event.service.config.pep_username;
	if not username then return; end
	local account = jid.join(username, host);
	local item = st.clone(event.item);
	item.attr.xmlns = nil;
	item.attr.id = event.id;
	local notice = st.message({ xmlns = "jabber:client", from = account, to = account, type = "headline", id = event.id })
		:tag("event", { xmlns = xmlns_pubsub_event })
			:tag("items", { node = xmlns_mds })
				:add_child(item)
			:up()
		:up();
	push_read(username, notice);
	local publisher = full_sessions[event.actor or ""];
	if publisher and publisher.username == username and publisher.host == host then
		note_activity(publisher);
	end
end

-- PEP services (mod_pep) are made per account on demand: watch each one as it appears.
local watched_services = {};

module:handle_items("pep-service", function (event)
	local service = event.item.service;
	if watched_services[service] then return; end
	watched_services[service] = true;
	service.events.add_handler("item-published/"..xmlns_mds, mds_published);
end, function (event)
	local service = event.item.service;
	watched_services[service] = nil;
	service.events.remove_handler("item-published/"..xmlns_mds, mds_published);
end);

-- 4. Accounts ----------------------------------------------------------------------------------

-- A deleted account's registrations go with it, here and at the component. Prosody purges the
-- account's stores, but mod_cloud_notify would go on pushing from its cache.
module:hook_global("user-deleted", function (event)
	if event.host ~= host or not component then return; end
	forget_registrations(event.username);
	send_to_component(unregistered(event.username));
end);

-- The component asks which of the accounts it holds registrations for still exist, so that the
-- operator can prune the others (docs/wire-contract.md, Bridge stanzas).
module:hook("iq-get/host/"..xmlns_bridge..":accounts", function (event)
	local origin, stanza = event.origin, event.stanza;
	if not component or jid.prep(stanza.attr.from or "") ~= component then
		origin.send(st.error_reply(stanza, "cancel", "forbidden", "Only the push component may ask"));
		return true;
	end
	local asked = {};
	for account in stanza.tags[1]:childtags("account") do
		if #asked == max_accounts_asked then
			origin.send(st.error_reply(stanza, "modify", "bad-request", ("At most %d accounts at once"):format(max_accounts_asked)));
			return true;
		end
		asked[#asked + 1] = account.attr.jid or "";
	end
	local reply = st.reply(stanza):tag("accounts", { xmlns = xmlns_bridge });
	for _, account in ipairs(asked) do
		local username, account_host, resource = jid.prepped_split(account);
		if not username or account_host ~= host or resource then
			origin.send(st.error_reply(stanza, "modify", "bad-request", "Each account must be a bare JID of "..host));
			return true;
		end
		reply:tag("account", { jid = account, exists = usermanager.user_exists(username, host) and "true" or "false" }):up();
	end
	origin.send(reply);
	return true;
end);

-- 5. The account's other sessions ---------------------------------------------------------------

-- For grace (docs/wire-contract.md, Bridge stanzas): the component holds an account's message pushes
-- while another of its sessions is available, or was active lately. Only sessions without push count:
-- a session that enabled push (a phone's, hibernated or not) is the device being pushed to. Only the
-- presence's `show` is read, never its status text or priority, and only accounts with a registration
-- at the component are reported. Every report the component misses only lets pushes through.
local activity_interval = module:get_option_number("apush_bridge_activity_interval", 10, 1);
-- Accounts whose last activity report is remembered; past this the memory starts afresh (it costs at
-- most one report more per account).
local max_active_accounts = 10000;
local last_active, active_accounts = {}, 0;

local function registered_at_component(username)
	for _, push_info in pairs(registration_store:get(username) or {}) do
		if push_info.jid == component then return true; end
	end
	return false;
end

-- What the component hears of a session: available is `show` absent or `chat`; away, xa, dnd,
-- unavailable, closed and hibernated are not.
local function is_available(presence)
	if not presence or presence.attr.type ~= nil then return false; end
	local show = presence:get_child_text("show");
	return show == nil or show == "chat";
end

-- Reports a session's availability when it changed from what the component last heard of it
-- (nothing heard: not available).
local function report_session(session, available)
	if not component or not session.username or session.host ~= host or not session.resource then return; end
	if session.push_identifier then available = false; end
	if available == (session.apush_reported_available or false) then return; end
	if available and not registered_at_component(session.username) then return; end
	session.apush_reported_available = available or nil;
	send_to_component(st.stanza("presence", {
		xmlns = xmlns_bridge;
		account = jid.join(session.username, host);
		resource = session.resource;
		available = available and "true" or "false";
	}));
end

-- The account's own presence broadcast (no `to`), before mod_presence takes it.
module:hook("presence/bare", function (event)
	local origin, stanza = event.origin, event.stanza;
	if stanza.attr.to or origin.type ~= "c2s" then return; end
	local kind = stanza.attr.type;
	if kind ~= nil and kind ~= "unavailable" then return; end
	report_session(origin, is_available(stanza));
end, 10);

-- A session that leaves without an unavailable presence, or hibernates (XEP-0198: the server keeps
-- it, but no one reads it), ends its hold; one that resumes is what its presence says again.
module:hook("resource-unbind", function (event) report_session(event.session, false); end, 10);
module:hook("smacks-hibernation-start", function (event) report_session(event.origin, false); end);
module:hook("smacks-hibernation-end", function (event)
	local session = event.resumed or event.origin;
	report_session(session, is_available(session.presence));
end);

local active_chat_states = { active = true, composing = true };
local chat_markers = { received = true, displayed = true, acknowledged = true };

-- Activity: a message with a body, a chat marker, or a chat state `active` or `composing`.
local function is_activity(stanza)
	if stanza.attr.type == "error" then return false; end
	local body = stanza:get_child_text("body");
	if body ~= nil and body ~= "" then return true; end
	for _, child in ipairs(stanza.tags) do
		if (child.attr.xmlns == xmlns_markers and chat_markers[child.name])
			or (child.attr.xmlns == xmlns_chatstates and active_chat_states[child.name]) then
			return true;
		end
	end
	return false;
end

-- The account was active on this session without push (`stanza`: what it sent; none for a XEP-0490
-- display): <active/>, at most once per account every activity_interval seconds.
function note_activity(session, stanza)
	if not component or session.push_identifier or (stanza and not is_activity(stanza)) then return; end
	local username, at = session.username, now();
	local last = last_active[username];
	if last and at - last < activity_interval then return; end
	if not last then
		if active_accounts >= max_active_accounts then last_active, active_accounts = {}, 0; end
		active_accounts = active_accounts + 1;
	end
	last_active[username] = at;
	if not registered_at_component(username) then return; end
	send_to_component(st.stanza("active", { xmlns = xmlns_bridge; account = jid.join(username, host) }));
end

function module.unload()
	while unanswered[1] do forget(1); end
	for service in pairs(watched_services) do
		service.events.remove_handler("item-published/"..xmlns_mds, mds_published);
	end
end
