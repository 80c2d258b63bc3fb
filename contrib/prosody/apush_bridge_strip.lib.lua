-- apush_bridge_strip: the stripped copy of a stanza that mod_apush_bridge forwards to the component.
--
-- The component classifies a push from this copy (a message, a call, a read, a wake). It gets the
-- attributes and the children classification reads, and nothing else: a body, a subject or an
-- encrypted payload leaves only an empty element of its name, so no text reaches the component and
-- no message, however large, can push a publish over the component's stanza limit. What a sender
-- adds beyond these children (an <account/> of the bridge's namespace, say) is dropped, not copied.
-- Pure: no module API, so test/strip_test.lua runs it with plain Lua. MIT licensed, part of
-- apush-component.

local st = require "util.stanza";

-- A rule says which attributes of an element are kept and, by namespace and name, which of its
-- children are (a nil `children` keeps none: the element is an empty marker), and, with `when`,
-- whether the element is kept at all.
local function rule(attributes, children, when)
	return { attributes = attributes or {}; children = children; when = when };
end
local marker = rule();
local with_id = rule({ "id" });
-- A body or subject of nothing but white space is none (mod_cloud_notify does not count it either).
local text_marker = rule(nil, nil, function (element)
	return (element:get_text() or ""):find("%S") ~= nil;
end);

local message_children = {};
local message_rule = rule({ "from", "to", "type", "id" }, message_children);

-- A <forwarded/> holding a message, as carbons (XEP-0280) wrap one.
local forwarded = rule({}, { ["urn:xmpp:forward:0"] = {
	forwarded = rule({}, { ["jabber:client"] = { message = message_rule } });
} });

message_children["jabber:client"] = { body = text_marker; subject = text_marker };
message_children["urn:xmpp:sid:0"] = { ["origin-id"] = with_id; ["stanza-id"] = rule({ "id", "by" }) };
message_children["urn:xmpp:carbons:2"] = { received = forwarded; sent = forwarded };
message_children["urn:xmpp:chat-markers:0"] = {
	markable = marker; received = with_id; displayed = with_id; acknowledged = with_id;
};
message_children["urn:xmpp:jingle-message:0"] = {
	propose = rule({ "id" }, { ["urn:xmpp:jingle:apps:rtp:1"] = { description = rule({ "media" }) } });
	retract = with_id; accept = with_id; proceed = with_id; reject = with_id; finish = with_id;
};
-- XEP-0372: a mention says who is mentioned; any other reference (a file's or a link's URL) is content.
message_children["urn:xmpp:reference:0"] = { reference = rule({ "type", "uri" }, nil, function (element)
	return element.attr.type == "mention";
end) };
-- XEP-0490: the chat is the item's id; what was displayed is not needed.
message_children["http://jabber.org/protocol/pubsub#event"] = {
	event = rule({}, { ["http://jabber.org/protocol/pubsub#event"] = {
		items = rule({ "node" }, { ["http://jabber.org/protocol/pubsub#event"] = { item = with_id } });
	} });
};
-- Encrypted payloads: only that there is one (OMEMO 0.3 and 0.8+, OpenPGP for XMPP, legacy PGP).
message_children["eu.siacs.conversations.axolotl"] = { encrypted = marker };
message_children["urn:xmpp:omemo:2"] = { encrypted = marker };
message_children["urn:xmpp:openpgp:0"] = { openpgp = marker };
message_children["jabber:x:encrypted"] = { x = marker };

-- Copies what `rules` keeps of `element`; nil for an element they do not name. Children in no
-- namespace of their own are in their parent's (`inherited`), as in the stream they came from.
local function copy(element, rules, inherited)
	local xmlns = element.attr.xmlns or inherited;
	local kept = rules[xmlns] and rules[xmlns][element.name];
	if not kept or (kept.when and not kept.when(element)) then return nil; end
	local attr = { xmlns = element.attr.xmlns };
	for _, name in ipairs(kept.attributes) do
		attr[name] = element.attr[name];
	end
	local result = st.stanza(element.name, attr);
	if kept.children then
		for _, child in ipairs(element.tags) do
			local child_copy = copy(child, kept.children, xmlns);
			if child_copy then result:add_direct_child(child_copy); end
		end
	end
	return result;
end

-- The cap on a forwarded copy: past it the push carries the account alone (docs/wire-contract.md, Bridge stanzas).
local default_limit = 16 * 1024;

local lib = { default_limit = default_limit };

-- The stripped copy of a message (namespaced jabber:client, to sit inside <forwarded/>), or nil
-- when the stanza is not a message or the copy would be longer than `limit` bytes serialised.
function lib.stripped(stanza, limit)
	if stanza.name ~= "message" then return nil; end
	local result = copy(stanza, { ["jabber:client"] = { message = message_rule } }, "jabber:client");
	result.attr.xmlns = "jabber:client";
	if #tostring(result) > (limit or default_limit) then return nil; end
	return result;
end

-- Whether `text` names `username` as a word of its own ("hi alice!", not "malice"): a mention by
-- name, which the component can no longer find once the body is stripped. Case is folded for ASCII
-- (the username is nodeprepped already); any byte of a multi-byte UTF-8 character counts as a
-- letter, so a name glued to a non-ASCII letter is no mention.
function lib.names(username, text)
	if not text or username == "" then return false; end
	local haystack, needle = text:lower(), username:lower();
	local start = 1;
	while true do
		local first, last = haystack:find(needle, start, true);
		if not first then return false; end
		local before, after = haystack:sub(first - 1, first - 1), haystack:sub(last + 1, last + 1);
		if not before:find("^[%w\128-\255]") and not after:find("^[%w\128-\255]") then return true; end
		start = first + 1;
	end
end

return lib;
