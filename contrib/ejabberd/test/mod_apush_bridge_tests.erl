%%% Unit tests of mod_apush_bridge's pure parts: which routed stanza is a
%%% publish to enrich and with which note, and the options it accepts. Run by
%%% run_tests.sh.
-module(mod_apush_bridge_tests).

-include_lib("eunit/include/eunit.hrl").
-include("xmpp.hrl").

-define(COMPONENT, <<"apush.example.org">>).

publish(From, To) ->
    Item = #ps_item{sub_els = [#push_notification{}]},
    #iq{type = set, id = <<"p1">>, from = jid:decode(From), to = jid:decode(To),
        sub_els = [#pubsub{publish = #ps_publish{node = <<"token">>, items = [Item]}}]}.

note(Server, SetAt) ->
    #{account => <<"alice@", Server/binary>>, luser => <<"alice">>, lserver => Server,
      stanza => none, set_at => SetAt}.

action(IQ, Note, Now) ->
    mod_apush_bridge:publish_action(IQ, ?COMPONENT, Note, Now).

setup() -> {ok, _} = application:ensure_all_started(xmpp).

publish_action_test_() ->
    {setup, fun setup/0, fun(_) -> ok end, [
        {"a publish to the component with a fresh note of its server is enriched with it",
         fun() ->
                 Note = note(<<"example.org">>, 1000),
                 ?assertEqual({publish, <<"token">>, Note},
                              action(publish(<<"example.org">>, ?COMPONENT), Note, 1500))
         end},
        {"a stale note is never used",
         fun() ->
                 ?assertEqual({publish, <<"token">>, none},
                              action(publish(<<"example.org">>, ?COMPONENT), note(<<"example.org">>, 1000), 2001))
         end},
        {"a note of another virtual host is never used",
         fun() ->
                 ?assertEqual({publish, <<"token">>, none},
                              action(publish(<<"example.org">>, ?COMPONENT), note(<<"other.org">>, 1000), 1000))
         end},
        {"a publish without a note is still one (a wake from mod_push_keepalive)",
         fun() ->
                 ?assertEqual({publish, <<"token">>, none},
                              action(publish(<<"example.org">>, ?COMPONENT), undefined, 0))
         end},
        {"a publish to another service, or to a JID of the component with a resource, passes",
         fun() ->
                 Note = note(<<"example.org">>, 0),
                 ?assertEqual(pass, action(publish(<<"example.org">>, <<"push.other.org">>), Note, 0)),
                 ?assertEqual(pass, action(publish(<<"example.org">>, <<"apush.example.org/r">>), Note, 0)),
                 ?assertEqual(pass, action(publish(<<"example.org">>, <<"x@apush.example.org">>), Note, 0))
         end},
        {"anything that is not mod_push's publish passes",
         fun() ->
                 IQ = publish(<<"example.org">>, ?COMPONENT),
                 ?assertEqual(pass, action(IQ#iq{sub_els = [#pubsub{}]}, undefined, 0)),
                 ?assertEqual(pass, action(IQ#iq{sub_els = [#xmlel{name = <<"pubsub">>}]}, undefined, 0)),
                 ?assertEqual(pass, action(#message{to = jid:decode(?COMPONENT)}, undefined, 0)),
                 Two = #ps_publish{node = <<"token">>, items = [#ps_item{sub_els = [#push_notification{}]},
                                                                 #ps_item{sub_els = [#push_notification{}]}]},
                 ?assertEqual(pass, action(IQ#iq{sub_els = [#pubsub{publish = Two}]}, undefined, 0))
         end}]}.

report_action_test_() ->
    [{"nothing held: idle", ?_assertEqual(idle, mod_apush_bridge:report_action(0, true, 10))},
     {"held while the component is connected: send the oldest", ?_assertEqual(send, mod_apush_bridge:report_action(3, true, 10))},
     {"held while it is away: keep them", ?_assertEqual(hold, mod_apush_bridge:report_action(10, false, 10))},
     {"more than the cap while it is away: drop the oldest",
      ?_assertEqual(drop_oldest, mod_apush_bridge:report_action(11, false, 10))}].

options_test_() ->
    {setup, fun setup/0, fun(_) -> ok end, [
        {"the component is a domain, prepared",
         fun() ->
                 ?assertEqual({ok, <<"apush.example.org">>},
                              yconf:validate(mod_apush_bridge:mod_opt_type(apush_bridge_component), <<"APush.Example.org">>)),
                 ?assertError(_, yconf:validate(mod_apush_bridge:mod_opt_type(apush_bridge_component), <<"not a domain@">>))
         end},
        {"allowed services are distinct domains",
         fun() ->
                 Validator = mod_apush_bridge:mod_opt_type(apush_bridge_allowed_services),
                 ?assertEqual({ok, [<<"a.example.org">>, <<"b.example.org">>]},
                              yconf:validate(Validator, [<<"a.example.org">>, <<"b.example.org">>])),
                 ?assertMatch({error, {duplicated_value, _}, _},
                              yconf:validate(Validator, [<<"a.example.org">>, <<"a.example.org">>]))
         end},
        {"the forwarded limit is at least 1 KiB",
         fun() ->
                 Validator = mod_apush_bridge:mod_opt_type(apush_bridge_forwarded_limit),
                 ?assertEqual({ok, 4096}, yconf:validate(Validator, 4096)),
                 ?assertMatch({error, {bad_int, _, _, 100}, _}, yconf:validate(Validator, 100))
         end},
        {"every option has a default and a description",
         fun() ->
                 Defaults = [Name || {Name, _} <- mod_apush_bridge:mod_options(<<"example.org">>)],
                 #{opts := Documented} = mod_apush_bridge:mod_doc(),
                 ?assertEqual(lists:sort(Defaults), lists:sort([Name || {Name, _} <- Documented])),
                 lists:foreach(fun(Name) -> ?assert(is_function(mod_apush_bridge:mod_opt_type(Name), 1)) end, Defaults)
         end}]}.
