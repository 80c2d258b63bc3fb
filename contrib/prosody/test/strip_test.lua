-- Unit tests of apush_bridge_strip.lib.lua, the stripped copy mod_apush_bridge forwards. Plain Lua
-- with Prosody's util.stanza; no server:
--
--     lua5.4 contrib/prosody/test/strip_test.lua        (exit status 0 when every check passes)

local prosody_lib = os.getenv("PROSODY_LIB") or "/usr/lib/prosody";
package.path = prosody_lib.."/?.lua;"..package.path;
package.cpath = prosody_lib.."/?.so;"..package.cpath;
local here = arg[0]:match("^(.*)/test/[^/]*$") or "contrib/prosody";

local st = require "util.stanza";
local xml = require "util.xml";
local strip = dofile(here.."/apush_bridge_strip.lib.lua");

local passed, failed = 0, 0;
local function check(label, condition, detail)
	if condition then
		passed = passed + 1;
		print("ok   "..label);
	else
		failed = failed + 1;
		print("FAIL "..label..(detail and (": "..tostring(detail)) or ""));
	end
end

-- A stanza as Prosody's stream parser (util.xmppstream) makes it: no xmlns on elements of the
-- stream's namespace, jabber:client, as long as every ancestor is of it too; explicit below any
-- element of another namespace.
local function parse(text)
	local stanza = assert(xml.parse(text));
	local function drop_client_namespace(element)
		if element.attr.xmlns ~= "jabber:client" then return; end
		element.attr.xmlns = nil;
		for _, child in ipairs(element.tags) do drop_client_namespace(child); end
	end
	drop_client_namespace(stanza);
	return stanza;
end

local function stripped(text, limit)
	return strip.stripped(parse(text), limit);
end

do
	local copy = stripped([[<message xmlns='jabber:client' from='bob@localhost/laptop' to='alice@localhost' type='chat' id='m1' xml:lang='en'>
		<body>secret words</body><subject>secret subject</subject><thread>t1</thread>
		<origin-id xmlns='urn:xmpp:sid:0' id='o1'/><stanza-id xmlns='urn:xmpp:sid:0' id='s1' by='alice@localhost'/>
		<markable xmlns='urn:xmpp:chat-markers:0'/></message>]]);
	local text = tostring(copy);
	check("a message keeps its from, to, type and id, namespaced jabber:client",
		copy.attr.xmlns == "jabber:client" and copy.attr.from == "bob@localhost/laptop" and copy.attr.to == "alice@localhost"
		and copy.attr.type == "chat" and copy.attr.id == "m1", text);
	check("the body and the subject become empty markers", copy:get_child("body") and copy:get_child_text("body") == ""
		and copy:get_child("subject") and copy:get_child_text("subject") == "", text);
	check("no text of the message is left", not text:find("secret") and not text:find("t1"), text);
	check("other attributes are dropped", copy.attr["xml:lang"] == nil, text);
	check("origin-id and stanza-id are kept", copy:get_child("origin-id", "urn:xmpp:sid:0").attr.id == "o1"
		and copy:get_child("stanza-id", "urn:xmpp:sid:0").attr.by == "alice@localhost", text);
	check("a markable marker is kept", copy:get_child("markable", "urn:xmpp:chat-markers:0") ~= nil, text);
end

do
	local copy = stripped("<message xmlns='jabber:client' from='bob@localhost/laptop' type='chat'><body> \n\t</body><subject/></message>");
	check("a body or subject of white space only leaves no marker", not copy:get_child("body") and not copy:get_child("subject"),
		tostring(copy));
end

do
	local copy = stripped([[<message xmlns='jabber:client' from='bob@localhost/laptop' to='alice@localhost' type='chat'>
		<encrypted xmlns='eu.siacs.conversations.axolotl'><header sid='1'><key rid='2'>S0VZ</key><iv>SVY=</iv></header><payload>UEFZTE9BRA==</payload></encrypted>
		<encrypted xmlns='urn:xmpp:omemo:2'><header sid='1'/><payload>UA==</payload></encrypted>
		<openpgp xmlns='urn:xmpp:openpgp:0'>QkFTRTY0</openpgp><x xmlns='jabber:x:encrypted'>UEdQ</x></message>]]);
	local text = tostring(copy);
	local omemo = copy:get_child("encrypted", "eu.siacs.conversations.axolotl");
	check("an encrypted payload leaves only an empty element of its name", omemo and #omemo.tags == 0 and #omemo == 0
		and copy:get_child("encrypted", "urn:xmpp:omemo:2") and copy:get_child("openpgp", "urn:xmpp:openpgp:0")
		and copy:get_child("x", "jabber:x:encrypted"), text);
	check("no key, iv or payload is left", not text:find("S0VZ") and not text:find("UEFZ") and not text:find("QkFT")
		and not text:find("UEdQ") and not text:find("header"), text);
end

do
	local copy = stripped([[<message xmlns='jabber:client' from='mallory@localhost/x' to='alice@localhost' type='chat'>
		<body>hi</body><account xmlns='urn:xmpp:apush:bridge:0' jid='bob@localhost' mention='true'/>
		<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' from='alice@localhost/desktop' to='bob@localhost'><body>x</body></message></forwarded>
		<x xmlns='jabber:x:oob'><url>https://example.org/file</url></x>
		<displayed xmlns='urn:xmpp:chat-markers:0' id='d1' extra='1'><nested/></displayed>
		<body xmlns='urn:example:other'>not a body</body></message>]]);
	local text = tostring(copy);
	check("what the sender adds beyond the kept children is dropped", not copy:get_child("account", "urn:xmpp:apush:bridge:0")
		and not copy:get_child("forwarded", "urn:xmpp:forward:0") and not copy:get_child("x", "jabber:x:oob")
		and not copy:get_child("body", "urn:example:other"), text);
	local displayed = copy:get_child("displayed", "urn:xmpp:chat-markers:0");
	check("a kept child keeps only its named attributes and no children", displayed and displayed.attr.id == "d1"
		and displayed.attr.extra == nil and #displayed.tags == 0, text);
end

do
	local copy = stripped([[<message xmlns='jabber:client' from='bob@localhost/phone' to='alice@localhost' type='chat'>
		<propose xmlns='urn:xmpp:jingle-message:0' id='sess1'>
		<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='audio'><payload-type id='111' name='opus'/></description>
		<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='video'/></propose>
		<store xmlns='urn:xmpp:hints'/></message>]]);
	local propose = copy:get_child("propose", "urn:xmpp:jingle-message:0");
	local media = {};
	for description in propose:childtags("description", "urn:xmpp:jingle:apps:rtp:1") do
		media[#media + 1] = description.attr.media;
		check("a description keeps its media and no payload types", #description.tags == 0, tostring(description));
	end
	check("a call's propose keeps its id and each description's media", propose.attr.id == "sess1"
		and media[1] == "audio" and media[2] == "video", tostring(copy));
	for _, name in ipairs({ "retract", "accept", "proceed", "reject", "finish" }) do
		local answer = stripped(("<message xmlns='jabber:client' from='bob@localhost/phone'><%s xmlns='urn:xmpp:jingle-message:0' id='sess1'><reason/></%s></message>"):format(name, name));
		local element = answer:get_child(name, "urn:xmpp:jingle-message:0");
		check("a JMI "..name.." keeps its id", element and element.attr.id == "sess1" and #element.tags == 0, tostring(answer));
	end
end

do
	local copy = stripped([[<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>
		<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'><delay xmlns='urn:xmpp:delay' stamp='2026-01-01T00:00:00Z'/>
		<message xmlns='jabber:client' from='alice@localhost/desktop' to='bob@localhost' type='chat' id='r1'>
		<body>my reply</body><displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/></message></forwarded></sent></message>]]);
	local inner = copy:find("{urn:xmpp:carbons:2}sent/{urn:xmpp:forward:0}forwarded/{jabber:client}message");
	local text = tostring(copy);
	check("a carbon keeps the message it wraps, stripped the same way", inner and inner.attr.id == "r1"
		and inner.attr.to == "bob@localhost" and inner:get_child_text("body") == ""
		and inner:get_child("displayed", "urn:xmpp:chat-markers:0").attr.id == "m1", text);
	check("no text of the wrapped message is left, nor its delay", not text:find("my reply") and not text:find("delay"), text);
end

do
	local copy = stripped([[<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost' type='headline' id='e1'>
		<event xmlns='http://jabber.org/protocol/pubsub#event'><items node='urn:xmpp:mds:displayed:0'>
		<item id='bob@localhost'><displayed xmlns='urn:xmpp:mds:displayed:0'><stanza-id xmlns='urn:xmpp:sid:0' id='s9' by='alice@localhost'/></displayed></item>
		</items></event></message>]]);
	local item = copy:find("{http://jabber.org/protocol/pubsub#event}event/items/item");
	local items = copy:find("{http://jabber.org/protocol/pubsub#event}event/items");
	check("an XEP-0490 event keeps its node and the item's id", items and items.attr.node == "urn:xmpp:mds:displayed:0"
		and item and item.attr.id == "bob@localhost" and #item.tags == 0, tostring(copy));
end

do
	local references = {};
	for i = 1, 3 do
		references[i] = ("<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@localhost' begin='%d' end='%d'/>"):format(i, i + 5);
	end
	local copy = stripped("<message xmlns='jabber:client' from='room@muc.localhost/bob' type='groupchat'><body>hey</body>"
		..table.concat(references).."</message>");
	local count = 0;
	for reference in copy:childtags("reference", "urn:xmpp:reference:0") do
		count = count + 1;
		check("a reference keeps its type and uri", reference.attr.type == "mention"
			and reference.attr.uri == "xmpp:alice@localhost" and reference.attr.begin == nil, tostring(reference));
	end
	check("every reference is kept", count == 3, tostring(copy));
end

do
	-- XEP-0372: only a mention is read (who is mentioned); a data reference carries a file's or a
	-- link's URL, which is the message's content.
	local copy = stripped("<message xmlns='jabber:client' from='bob@localhost/laptop' type='chat'><body>see</body>"
		.."<reference xmlns='urn:xmpp:reference:0' type='data' uri='https://files.example/secret.jpg'/>"
		.."<reference xmlns='urn:xmpp:reference:0' uri='xmpp:carol@localhost'/>"
		.."<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@localhost'/></message>");
	local kept = {};
	for reference in copy:childtags("reference", "urn:xmpp:reference:0") do kept[#kept + 1] = reference; end
	check("a reference other than a mention is dropped", #kept == 1 and kept[1].attr.type == "mention"
		and kept[1].attr.uri == "xmpp:alice@localhost", tostring(copy));
	check("no URL of a data reference is left", not tostring(copy):find("secret", 1, true), tostring(copy));
end

do
	local large = stripped("<message xmlns='jabber:client' from='bob@localhost/laptop' to='alice@localhost' type='chat' id='big'><body>"
		..string.rep("x", 250 * 1024).."</body></message>");
	check("a message with a 250 KiB body becomes a copy of a few hundred bytes", large and #tostring(large) < 300,
		large and #tostring(large));
	local long_id = stripped("<message xmlns='jabber:client' from='bob@localhost/laptop' type='chat' id='"
		..string.rep("i", 20 * 1024).."'><body>x</body></message>");
	check("a copy over the 16 KiB cap is not made", long_id == nil);
	local many = {};
	for i = 1, 2000 do many[i] = "<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@localhost'/>"; end
	check("many small kept children over the cap make no copy either",
		stripped("<message xmlns='jabber:client' from='a@localhost/b'>"..table.concat(many).."</message>") == nil);
	local at_cap = stripped("<message xmlns='jabber:client' from='bob@localhost/laptop' id='"..string.rep("i", 100).."'/>", 100);
	check("the cap is a parameter", at_cap == nil);
end

check("a presence is not copied", stripped("<presence xmlns='jabber:client' from='bob@localhost/x'/>") == nil);
check("an IQ is not copied", stripped("<iq xmlns='jabber:client' type='get' id='1'><ping xmlns='urn:xmpp:ping'/></iq>") == nil);

check("a name standing alone is a mention", strip.names("alice", "hi alice!"));
check("a name in any ASCII case is a mention", strip.names("alice", "ALICE: look"));
check("a name at the very start and end is a mention", strip.names("alice", "alice") and strip.names("alice", "ask alice"));
check("a name inside a word is no mention", not strip.names("alice", "malice") and not strip.names("alice", "alice2"));
check("a name glued to a non-ASCII letter is no mention", not strip.names("alice", "alicé"));
check("a later standalone occurrence still counts", strip.names("alice", "malice, alice"));
check("no body, no mention", not strip.names("alice", nil));
check("pattern characters in a username are taken literally", strip.names("a.b", "hi a.b") and not strip.names("a.b", "hi axb"));

print(("%d passed, %d failed"):format(passed, failed));
os.exit(failed == 0 and 0 or 1);
