%%% Unit tests of mod_apush_bridge_stanza: the stripped copy, mentions, and
%%% the notification a push to the component carries. Run by run_tests.sh.
-module(mod_apush_bridge_stanza_tests).

-include_lib("eunit/include/eunit.hrl").
-include("xmpp.hrl").

-define(LIMIT, 16384).

xml(Text) -> fxml_stream:parse_element(iolist_to_binary(Text)).
text(Element) -> fxml:element_to_binary(Element).
stripped(Text) -> mod_apush_bridge_stanza:stripped(xml(Text), ?LIMIT).
stripped_text(Text) -> text(stripped(Text)).

%%% The stripped copy

a_body_becomes_an_empty_marker_and_nothing_of_its_text_remains_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client' from='bob@example.org/laptop' to='alice@example.org' ",
                          "type='chat' id='m1' xml:lang='en'><body>the secret plan</body>",
                          "<subject>also secret</subject><thread>t1</thread></message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client' from='bob@example.org/laptop' to='alice@example.org' ",
                   "type='chat' id='m1'><body/><subject/></message>">>, Copy).

a_body_of_white_space_only_is_no_body_test() ->
    ?assertEqual(<<"<message xmlns='jabber:client' type='chat'/>">>,
                 stripped_text("<message xmlns='jabber:client' type='chat'><body> \n\t</body></message>")).

ids_markers_and_references_keep_only_the_attributes_classification_reads_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client' id='m1'>",
                          "<origin-id xmlns='urn:xmpp:sid:0' id='o1' extra='x'/>",
                          "<stanza-id xmlns='urn:xmpp:sid:0' id='s1' by='alice@example.org'/>",
                          "<markable xmlns='urn:xmpp:chat-markers:0'/>",
                          "<displayed xmlns='urn:xmpp:chat-markers:0' id='m0'/>",
                          "<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@example.org' begin='0'/>",
                          "</message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client' id='m1'><origin-id xmlns='urn:xmpp:sid:0' id='o1'/>",
                   "<stanza-id xmlns='urn:xmpp:sid:0' id='s1' by='alice@example.org'/>",
                   "<markable xmlns='urn:xmpp:chat-markers:0'/><displayed xmlns='urn:xmpp:chat-markers:0' id='m0'/>",
                   "<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@example.org'/></message>">>,
                 Copy).

%% XEP-0372: only a mention is read (who is mentioned); a data reference
%% carries a file's or a link's URL, which is the message's content.
only_a_mention_reference_is_kept_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client' type='chat'><body>see</body>",
                          "<reference xmlns='urn:xmpp:reference:0' type='data' uri='https://files.example/secret.jpg'/>",
                          "<reference xmlns='urn:xmpp:reference:0' uri='xmpp:carol@example.org'/>",
                          "<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@example.org'/>",
                          "</message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client' type='chat'><body/>",
                   "<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@example.org'/></message>">>,
                 Copy).

a_call_keeps_its_session_and_media_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client' type='chat'>",
                          "<propose xmlns='urn:xmpp:jingle-message:0' id='sid-1'>",
                          "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='audio'><payload-type id='1'/></description>",
                          "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='video'/></propose>",
                          "<store xmlns='urn:xmpp:hints'/></message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client' type='chat'><propose xmlns='urn:xmpp:jingle-message:0' id='sid-1'>",
                   "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='audio'/>",
                   "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='video'/></propose></message>">>, Copy),
    lists:foreach(fun(Answer) ->
                          ?assertEqual(<<"<message xmlns='jabber:client'><", Answer/binary,
                                         " xmlns='urn:xmpp:jingle-message:0' id='sid-1'/></message>">>,
                                       stripped_text(["<message xmlns='jabber:client'><", Answer,
                                                      " xmlns='urn:xmpp:jingle-message:0' id='sid-1'><reason/></",
                                                      Answer, "></message>"]))
                  end, [<<"retract">>, <<"accept">>, <<"proceed">>, <<"reject">>, <<"finish">>]).

a_carbon_keeps_the_message_it_wraps_stripped_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client' from='alice@example.org' to='alice@example.org/phone' type='chat'>",
                          "<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>",
                          "<delay xmlns='urn:xmpp:delay' stamp='2026-01-01T00:00:00Z'/>",
                          "<message xmlns='jabber:client' from='alice@example.org/laptop' to='bob@example.org' type='chat'>",
                          "<body>hello</body><displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/></message>",
                          "</forwarded></sent></message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client' from='alice@example.org' to='alice@example.org/phone' type='chat'>",
                   "<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>",
                   "<message xmlns='jabber:client' from='alice@example.org/laptop' to='bob@example.org' type='chat'>",
                   "<body/><displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/></message></forwarded></sent></message>">>,
                 Copy).

encrypted_payloads_leave_only_that_there_is_one_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client'>",
                          "<encrypted xmlns='eu.siacs.conversations.axolotl'><header sid='1'/><payload>AAAA</payload></encrypted>",
                          "<encrypted xmlns='urn:xmpp:omemo:2'><payload>BBBB</payload></encrypted>",
                          "<openpgp xmlns='urn:xmpp:openpgp:0'>CCCC</openpgp>",
                          "<x xmlns='jabber:x:encrypted'>DDDD</x></message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client'><encrypted xmlns='eu.siacs.conversations.axolotl'/>",
                   "<encrypted xmlns='urn:xmpp:omemo:2'/><openpgp xmlns='urn:xmpp:openpgp:0'/>",
                   "<x xmlns='jabber:x:encrypted'/></message>">>, Copy).

a_displayed_marker_published_to_pep_keeps_its_chat_test() ->
    Notice = mod_apush_bridge_stanza:mds_notice(<<"alice@example.org">>, <<"bob@example.org">>),
    ?assertEqual(<<"<message xmlns='jabber:client' from='alice@example.org' to='alice@example.org' type='headline' ",
                   "id='bob@example.org'><event xmlns='http://jabber.org/protocol/pubsub#event'>",
                   "<items node='urn:xmpp:mds:displayed:0'><item id='bob@example.org'/></items></event></message>">>,
                 text(mod_apush_bridge_stanza:stripped(Notice, ?LIMIT))).

what_a_sender_adds_beyond_the_rules_is_dropped_test() ->
    Copy = stripped_text(["<message xmlns='jabber:client'><account xmlns='urn:xmpp:apush:bridge:0' jid='mallory@example.org'/>",
                          "<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client'/></forwarded>",
                          "<body xmlns='urn:other'>x</body><x xmlns='jabber:x:oob'><url>u</url></x></message>"]),
    ?assertEqual(<<"<message xmlns='jabber:client'/>">>, Copy).

a_copy_over_the_cap_is_left_out_test() ->
    Many = [["<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:", integer_to_list(N), "@example.org'/>"]
            || N <- lists:seq(1, 400)],
    Message = xml(["<message xmlns='jabber:client'><body>hi</body>", Many, "</message>"]),
    ?assertEqual(none, mod_apush_bridge_stanza:stripped(Message, ?LIMIT)),
    ?assertMatch(#xmlel{}, mod_apush_bridge_stanza:stripped(Message, 1 bsl 20)).

a_large_body_does_not_count_against_the_cap_test() ->
    Body = binary:copy(<<"x">>, 250000),
    Copy = mod_apush_bridge_stanza:stripped(xml(["<message xmlns='jabber:client'><body>", Body, "</body></message>"]), ?LIMIT),
    ?assertEqual(<<"<message xmlns='jabber:client'><body/></message>">>, text(Copy)).

only_messages_are_copied_test() ->
    ?assertEqual(none, stripped("<presence xmlns='jabber:client' from='bob@example.org'/>")),
    ?assertEqual(none, stripped("<iq xmlns='jabber:client' type='get' id='1'/>")).

%%% Mentions, importance and reads

a_mention_is_a_word_of_its_own_test() ->
    Names = fun(Text) -> mod_apush_bridge_stanza:names(<<"alice">>, Text) end,
    ?assert(Names(<<"hi alice!">>)),
    ?assert(Names(<<"ALICE, look">>)),
    ?assert(Names(<<"alice">>)),
    ?assertNot(Names(<<"malice">>)),
    ?assertNot(Names(<<"alice2 and alices">>)),
    ?assert(Names(<<"malice, alice">>)),
    ?assertNot(Names(<<"éalice"/utf8>>)),
    ?assertNot(Names(undefined)),
    ?assertNot(mod_apush_bridge_stanza:names(<<>>, <<"anything">>)).

a_body_a_call_or_an_encrypted_payload_to_the_account_is_important_test() ->
    Important = fun(Text) -> mod_apush_bridge_stanza:is_important(xml(Text), <<"alice@example.org">>) end,
    ?assert(Important("<message xmlns='jabber:client' from='bob@example.org/x'><body>hi</body></message>")),
    ?assert(Important("<message xmlns='jabber:client' from='bob@example.org'><encrypted xmlns='urn:xmpp:omemo:2'/></message>")),
    ?assert(Important("<message xmlns='jabber:client' from='bob@example.org'><propose xmlns='urn:xmpp:jingle-message:0' id='s'/></message>")),
    ?assert(Important(["<message xmlns='jabber:client' from='alice@example.org'><received xmlns='urn:xmpp:carbons:2'>",
                       "<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' from='bob@example.org'>",
                       "<body>hi</body></message></forwarded></received></message>"])),
    ?assertNot(Important(["<message xmlns='jabber:client' from='alice@example.org'><sent xmlns='urn:xmpp:carbons:2'>",
                          "<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' from='alice@example.org/pc' ",
                          "to='bob@example.org'><body>hi</body></message></forwarded></sent></message>"])),
    ?assertNot(Important("<message xmlns='jabber:client' from='alice@example.org/pc' to='bob@example.org'><body>mine</body></message>")),
    ?assertNot(Important("<message xmlns='jabber:client' from='bob@example.org' type='headline'><body>news</body></message>")),
    ?assertNot(Important("<message xmlns='jabber:client' from='room@muc/x' type='groupchat'><subject>topic</subject><body>b</body></message>")),
    ?assertNot(Important("<message xmlns='jabber:client' from='bob@example.org'><body>  </body></message>")),
    ?assertNot(Important("<message xmlns='jabber:client' from='bob@example.org'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")),
    ?assertNot(Important("<presence xmlns='jabber:client'/>")).

a_read_is_a_body_or_a_displayed_marker_to_someone_else_test() ->
    Read = fun(Text) -> mod_apush_bridge_stanza:is_read(xml(Text), <<"alice@example.org">>) end,
    ?assert(Read("<message xmlns='jabber:client' to='bob@example.org' type='chat'><body>hi</body></message>")),
    ?assert(Read("<message xmlns='jabber:client' to='Bob@example.org/x'><displayed xmlns='urn:xmpp:chat-markers:0' id='1'/></message>")),
    ?assertNot(Read("<message xmlns='jabber:client' to='alice@example.org/phone' type='chat'><body>note to self</body></message>")),
    ?assertNot(Read("<message xmlns='jabber:client' to='ALICE@example.org' type='chat'><body>note to self</body></message>")),
    ?assertNot(Read("<message xmlns='jabber:client' to='bob@example.org' type='error'><body>hi</body></message>")),
    ?assertNot(Read("<message xmlns='jabber:client' to='bob@example.org' type='headline'><body>hi</body></message>")),
    ?assertNot(Read("<message xmlns='jabber:client' type='chat'><body>hi</body></message>")),
    ?assertNot(Read("<message xmlns='jabber:client' to='bob@example.org'><received xmlns='urn:xmpp:chat-markers:0' id='1'/></message>")).

%%% The bridged notification

summary() ->
    xml(["<notification xmlns='urn:xmpp:push:0'><x xmlns='jabber:x:data' type='submit'>",
         "<field var='FORM_TYPE' type='hidden'><value>urn:xmpp:push:summary</value></field>",
         "<field var='last-message-sender' type='jid-single'><value>bob@example.org/laptop</value></field>",
         "<field var='last-message-body' type='text-single'><value>the real text</value></field>",
         "</x></notification>"]).

a_notification_names_its_account_and_carries_the_stripped_copy_test() ->
    Original = xml(["<message xmlns='jabber:client' from='bob@example.org/laptop' to='alice@example.org' type='chat' id='m1'>",
                    "<body>the real text</body></message>"]),
    Bridged = text(mod_apush_bridge_stanza:bridged_notification(summary(), <<"alice@example.org">>, Original, ?LIMIT)),
    ?assertEqual(nomatch, binary:match(Bridged, <<"the real text">>)),
    ?assertNotEqual(nomatch, binary:match(Bridged, <<"<value>New message</value>">>)),
    ?assertNotEqual(nomatch, binary:match(Bridged, <<"<account xmlns='urn:xmpp:apush:bridge:0' jid='alice@example.org' important='true'/>">>)),
    ?assertNotEqual(nomatch, binary:match(Bridged, <<"<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' ",
                                                     "from='bob@example.org/laptop' to='alice@example.org' type='chat' id='m1'>",
                                                     "<body/></message></forwarded>">>)).

a_notification_with_a_mention_by_name_says_so_test() ->
    Original = xml("<message xmlns='jabber:client' from='room@muc.example.org/bob' type='groupchat'><body>alice: look</body></message>"),
    Bridged = text(mod_apush_bridge_stanza:bridged_notification(xml("<notification xmlns='urn:xmpp:push:0'/>"),
                                                                 <<"alice@example.org">>, Original, ?LIMIT)),
    ?assertNotEqual(nomatch, binary:match(Bridged, <<"important='true' mention='true'/>">>)).

a_wake_names_only_its_account_test() ->
    Bridged = text(mod_apush_bridge_stanza:bridged_notification(xml("<notification xmlns='urn:xmpp:push:0'/>"),
                                                                 <<"alice@example.org">>, none, ?LIMIT)),
    ?assertEqual(<<"<notification xmlns='urn:xmpp:push:0'><account xmlns='urn:xmpp:apush:bridge:0' ",
                   "jid='alice@example.org' important='false'/></notification>">>, Bridged).

a_copy_over_the_cap_leaves_the_account_alone_test() ->
    Original = xml(["<message xmlns='jabber:client'><body>x</body>",
                    [["<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:", integer_to_list(N), "@a'/>"]
                     || N <- lists:seq(1, 100)], "</message>"]),
    Bridged = mod_apush_bridge_stanza:bridged_notification(xml("<notification xmlns='urn:xmpp:push:0'/>"),
                                                           <<"alice@example.org">>, Original, 1024),
    ?assertMatch(#xmlel{children = [#xmlel{name = <<"account">>}]}, Bridged).

%%% Registrations

oversized_registrations_are_refused_test() ->
    Form = xml("<x xmlns='jabber:x:data' type='submit'><field var='pushModule'><value>fcm</value></field></x>"),
    ?assertNot(mod_apush_bridge_stanza:is_oversized_registration(binary:copy(<<"t">>, 2048), Form)),
    ?assert(mod_apush_bridge_stanza:is_oversized_registration(binary:copy(<<"t">>, 2049), Form)),
    ?assertNot(mod_apush_bridge_stanza:is_oversized_registration(<<"t">>, undefined)),
    Large = xml(["<x xmlns='jabber:x:data' type='submit'><field var='pushModule'><value>",
                 binary:copy(<<"m">>, 4096), "</value></field></x>"]),
    ?assert(mod_apush_bridge_stanza:is_oversized_registration(<<"t">>, Large)).

oversized_is_measured_as_sent_escaped_test() ->
    %% 1000 apostrophes are 6000 bytes once fxml writes each as &apos;.
    Form = xml(["<x xmlns='jabber:x:data' type='submit'><field var='pushModule'><value>",
                binary:copy(<<"&apos;">>, 1000), "</value></field></x>"]),
    ?assert(mod_apush_bridge_stanza:is_oversized_registration(<<"t">>, Form)),
    ?assert(mod_apush_bridge_stanza:is_oversized_registration(binary:copy(<<"'">>, 400), undefined)).

-define(COMPONENT, <<"apush.example.org">>).
-define(FORM, xml("<x xmlns='jabber:x:data' type='submit'><field var='pushModule'><value>fcm</value></field></x>")).

refusal(LService, Node, Form) ->
    mod_apush_bridge_stanza:enable_refusal(LService, ?COMPONENT, Node, Form).

an_enable_towards_the_component_with_a_form_is_accepted_test() ->
    ?assertEqual(none, refusal({<<>>, ?COMPONENT, <<>>}, <<"tok">>, ?FORM)).

another_jid_of_the_components_domain_is_refused_test() ->
    ?assertMatch(<<_/binary>>, refusal({<<"x">>, ?COMPONENT, <<>>}, <<"tok">>, ?FORM)),
    ?assertMatch(<<_/binary>>, refusal({<<>>, ?COMPONENT, <<"x">>}, <<"tok">>, ?FORM)).

an_enable_towards_the_component_without_a_form_is_refused_test() ->
    ?assertMatch(<<_/binary>>, refusal({<<>>, ?COMPONENT, <<>>}, <<"tok">>, undefined)).

the_caps_apply_to_every_service_test() ->
    Large = xml(["<x xmlns='jabber:x:data' type='submit'><field var='p'><value>", binary:copy(<<"m">>, 4096),
                 "</value></field></x>"]),
    ?assertEqual(none, refusal({<<>>, <<"push.example.net">>, <<>>}, <<"tok">>, undefined)),
    ?assertMatch(<<_/binary>>, refusal({<<>>, <<"push.example.net">>, <<>>}, <<"tok">>, Large)),
    ?assertMatch(<<_/binary>>, refusal({<<>>, <<"push.example.net">>, <<>>}, binary:copy(<<"t">>, 2049), undefined)).

%%% The component's answers

echo(Type, Condition, Registered) ->
    xml(["<message xmlns='jabber:component:accept' type='error' from='apush.example.org' to='example.org' id='r1'>",
         Registered, "<error type='", Type, "'><", Condition, " xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error>",
         "</message>"]).

-define(REGISTERED, "<registered xmlns='urn:xmpp:apush:bridge:0' account='alice@example.org'>"
                    "<enable xmlns='urn:xmpp:push:0' jid='apush.example.org' node='TOKEN'/></registered>").

a_refused_registration_names_its_account_and_token_test() ->
    ?assertEqual({<<"alice@example.org">>, <<"TOKEN">>},
                 mod_apush_bridge_stanza:refused_registration(echo("modify", "not-acceptable", ?REGISTERED))),
    ?assertEqual({<<"alice@example.org">>, <<"TOKEN">>},
                 mod_apush_bridge_stanza:refused_registration(echo("cancel", "item-not-found", ?REGISTERED))).

a_wait_error_refuses_nothing_test() ->
    ?assertEqual(none, mod_apush_bridge_stanza:refused_registration(echo("wait", "resource-constraint", ?REGISTERED))).

an_echo_without_account_or_token_refuses_nothing_test() ->
    ?assertEqual(none, mod_apush_bridge_stanza:refused_registration(
                         echo("modify", "not-acceptable", "<registered xmlns='urn:xmpp:apush:bridge:0'>"
                              "<enable xmlns='urn:xmpp:push:0' jid='apush.example.org' node='T'/></registered>"))),
    ?assertEqual(none, mod_apush_bridge_stanza:refused_registration(
                         echo("modify", "not-acceptable", "<registered xmlns='urn:xmpp:apush:bridge:0' account='a@example.org'>"
                              "<enable xmlns='urn:xmpp:push:0' jid='apush.example.org'/></registered>"))),
    ?assertEqual(none, mod_apush_bridge_stanza:refused_registration(echo("modify", "not-acceptable", ""))),
    ?assertEqual(none, mod_apush_bridge_stanza:refused_registration(
                         xml(["<message xmlns='jabber:component:accept' from='apush.example.org'>", ?REGISTERED,
                              "</message>"]))).

a_token_is_logged_as_its_fingerprint_test() ->
    %% The component's own: "#" and the first 8 hex digits of its SHA-256.
    ?assertEqual(<<"#2c26b46b">>, mod_apush_bridge_stanza:fingerprint(<<"foo">>)).

%%% The accounts query

accounts(Jids) ->
    xml(["<accounts xmlns='urn:xmpp:apush:bridge:0'>", [["<account jid='", J, "'/>"] || J <- Jids], "</accounts>"]).

the_asked_accounts_are_listed_in_order_test() ->
    ?assertEqual({ok, [<<"b@example.org">>, <<"a@example.org">>]},
                 mod_apush_bridge_stanza:asked_accounts(accounts(["b@example.org", "a@example.org"]), 100)),
    ?assertEqual({ok, [<<>>]}, mod_apush_bridge_stanza:asked_accounts(
                                 xml("<accounts xmlns='urn:xmpp:apush:bridge:0'><account/></accounts>"), 100)).

more_accounts_than_the_cap_are_refused_test() ->
    Jids = [["u", integer_to_list(N), "@example.org"] || N <- lists:seq(1, 101)],
    ?assertEqual(too_many, mod_apush_bridge_stanza:asked_accounts(accounts(Jids), 100)),
    ?assertMatch({ok, [_ | _]}, mod_apush_bridge_stanza:asked_accounts(accounts(tl(Jids)), 100)).

the_answer_says_whether_each_exists_test() ->
    ?assertEqual(<<"<accounts xmlns='urn:xmpp:apush:bridge:0'><account jid='a@example.org' exists='true'/>",
                   "<account jid='g@example.org' exists='false'/></accounts>">>,
                 text(mod_apush_bridge_stanza:accounts_answer([{<<"a@example.org">>, true}, {<<"g@example.org">>, false}]))).

%%% The account's other sessions (grace)

activity_is_a_body_a_chat_marker_or_an_active_or_composing_chat_state_test() ->
    Activity = fun(Children) ->
                       mod_apush_bridge_stanza:is_activity(
                         xml(["<message xmlns='jabber:client' to='bob@example.org' type='chat'>", Children, "</message>"]))
               end,
    ?assert(Activity("<body>hi</body>")),
    ?assert(Activity("<displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/>")),
    ?assert(Activity("<received xmlns='urn:xmpp:chat-markers:0' id='m1'/>")),
    ?assert(Activity("<composing xmlns='http://jabber.org/protocol/chatstates'/>")),
    ?assert(Activity("<active xmlns='http://jabber.org/protocol/chatstates'/>")),
    ?assertNot(Activity("<paused xmlns='http://jabber.org/protocol/chatstates'/>")),
    ?assertNot(Activity("<gone xmlns='http://jabber.org/protocol/chatstates'/>")),
    ?assertNot(Activity("<body> </body>")),
    ?assertNot(Activity("<markable xmlns='urn:xmpp:chat-markers:0'/>")),
    ?assertNot(mod_apush_bridge_stanza:is_activity(
                 xml("<message xmlns='jabber:client' type='error'><body>hi</body></message>"))).

available_is_show_absent_or_chat_test() ->
    Available = fun(Text) -> mod_apush_bridge_stanza:is_available(xml(Text)) end,
    ?assert(Available("<presence xmlns='jabber:client'><status>at work</status><priority>5</priority></presence>")),
    ?assert(Available("<presence xmlns='jabber:client'><show>chat</show></presence>")),
    [?assertNot(Available(["<presence xmlns='jabber:client'><show>", Show, "</show></presence>"]))
     || Show <- ["away", "xa", "dnd"]],
    ?assertNot(Available("<presence xmlns='jabber:client' type='unavailable'/>")).

a_session_report_names_the_account_the_resource_and_nothing_else_test() ->
    ?assertEqual(<<"<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@example.org' resource='laptop' ",
                   "available='true'/>">>,
                 text(mod_apush_bridge_stanza:presence_report(<<"alice@example.org">>, <<"laptop">>, true))),
    ?assertEqual(<<"<active xmlns='urn:xmpp:apush:bridge:0' account='alice@example.org'/>">>,
                 text(mod_apush_bridge_stanza:active_report(<<"alice@example.org">>))).
