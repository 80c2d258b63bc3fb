%%% Unit tests of mod_apush_bridge_replay: the publishes kept until the
%%% component answers them, their bounds, and which answers send one again.
%%% Run by build.sh --test.
-module(mod_apush_bridge_replay_tests).

-include_lib("eunit/include/eunit.hrl").

limits() ->
    #{max_count => 3, max_bytes => 1024 * 1024, max_age => 300000, answer_timeout => 30000}.

%% The limits with some changed.
limits(Changed) ->
    maps:merge(limits(), Changed).

keep(Id, SentAt, Now, R) ->
    keep(Id, SentAt, Now, limits(), R).

keep(Id, SentAt, Now, Limits, R) ->
    mod_apush_bridge_replay:keep(Id, {publish, Id}, SentAt, Now, Limits, R).

%% Keeps each id, sent at 0, and returns the queue.
kept(Ids) ->
    lists:foldl(fun(Id, R) -> {[], R1} = keep(Id, 0, 0, R), R1 end, mod_apush_bridge_replay:new(), Ids).

due(Now, Connected, R) ->
    mod_apush_bridge_replay:due(Now, Connected, 10, limits(), R).

keep_test_() ->
    [{"a sent publish is not due before the answer timeout",
      ?_assertMatch({[], [], _}, due(30000, true, kept([<<"a">>])))},
     {"a publish not answered within the timeout is sent again",
      ?_assertMatch({[], [{publish, <<"a">>}], _}, due(30001, true, kept([<<"a">>])))},
     {"a publish held back while the component is away is sent once it is connected, oldest first",
      fun() ->
              {[], R1} = keep(<<"a">>, undefined, 0, mod_apush_bridge_replay:new()),
              {[], R2} = keep(<<"b">>, undefined, 10, R1),
              {[], [], R3} = due(1000, false, R2),
              {[], Sent, R4} = due(2000, true, R3),
              ?assertEqual([{publish, <<"a">>}, {publish, <<"b">>}], Sent),
              %% Once sent, each waits for its answer.
              ?assertMatch({[], [], _}, due(3000, true, R4))
      end},
     {"at most the limit is sent at once; the rest on the next turn",
      fun() ->
              R = lists:foldl(fun(N, Acc) -> {_, Acc1} = keep(integer_to_binary(N), undefined, N,
                                                               limits(#{max_count => 20}), Acc),
                                             Acc1
                              end, mod_apush_bridge_replay:new(), lists:seq(1, 12)),
              {[], First, R1} = due(100, true, R),
              ?assertEqual(10, length(First)),
              {[], Rest, _} = due(200, true, R1),
              ?assertEqual([{publish, <<"11">>}, {publish, <<"12">>}], Rest)
      end},
     {"an id kept already is not kept twice",
      fun() ->
              {[], R} = keep(<<"a">>, undefined, 0, kept([<<"a">>])),
              ?assertEqual(1, mod_apush_bridge_replay:size(R))
      end},
     {"max_count 0 keeps nothing",
      ?_assertMatch({[], _}, keep(<<"a">>, 0, 0, limits(#{max_count => 0}), mod_apush_bridge_replay:new()))},
     {"max_count 0 leaves the queue empty",
      fun() ->
              {[], R} = keep(<<"a">>, 0, 0, limits(#{max_count => 0}), mod_apush_bridge_replay:new()),
              ?assertEqual(0, mod_apush_bridge_replay:size(R))
      end}].

bounds_test_() ->
    [{"past the count bound the oldest is dropped and named",
      fun() ->
              {Dropped, R} = keep(<<"d">>, undefined, 1, kept([<<"a">>, <<"b">>, <<"c">>])),
              ?assertEqual([<<"a">>], Dropped),
              ?assertEqual(3, mod_apush_bridge_replay:size(R)),
              {[], Sent, _} = due(1, true, R),
              ?assertEqual([{publish, <<"d">>}], Sent)
      end},
     {"past the byte bound the oldest are dropped",
      fun() ->
              Size = erlang:external_size({publish, <<"a">>}),
              Limits = limits(#{max_bytes => 2 * Size}),
              {[], R1} = keep(<<"a">>, 0, 0, Limits, mod_apush_bridge_replay:new()),
              {[], R2} = keep(<<"b">>, 0, 0, Limits, R1),
              {Dropped, R3} = keep(<<"c">>, 0, 0, Limits, R2),
              ?assertEqual([<<"a">>], Dropped),
              ?assertEqual(2, mod_apush_bridge_replay:size(R3))
      end},
     {"one publish larger than the byte bound is not kept",
      ?_assertMatch({[<<"a">>], _}, keep(<<"a">>, 0, 0, limits(#{max_bytes => 1}), mod_apush_bridge_replay:new()))},
     {"a kept publish older than the age bound is dropped, not sent; a younger one is sent",
      fun() ->
              {[], R1} = keep(<<"old">>, undefined, 0, mod_apush_bridge_replay:new()),
              {[], R2} = keep(<<"young">>, undefined, 200000, R1),
              {Aged, Sent, R3} = due(300001, true, R2),
              ?assertEqual([<<"old">>], Aged),
              ?assertEqual([{publish, <<"young">>}], Sent),
              ?assertEqual(1, mod_apush_bridge_replay:size(R3))
      end}].

answer_test_() ->
    Wait = fun(Condition) -> mod_apush_bridge_replay:answer_action(error, {wait, Condition}) end,
    [{"a result forgets the publish",
      fun() ->
              R = mod_apush_bridge_replay:answered(<<"a">>, mod_apush_bridge_replay:answer_action(result, undefined),
                                                   kept([<<"a">>])),
              ?assertEqual(0, mod_apush_bridge_replay:size(R))
      end},
     {"wait for a store fault (resource-constraint, internal-server-error) or a bounce sends it again",
      [?_assertEqual(replay, Wait('resource-constraint')),
       ?_assertEqual(replay, Wait('internal-server-error')),
       ?_assertEqual(replay, Wait('remote-server-timeout'))]},
     {"any other error ends it: the registration's fate is mod_push's",
      [?_assertEqual(forget, Wait('policy-violation')),
       ?_assertEqual(forget, mod_apush_bridge_replay:answer_action(error, {cancel, 'item-not-found'})),
       ?_assertEqual(forget, mod_apush_bridge_replay:answer_action(error, {modify, 'resource-constraint'})),
       ?_assertEqual(forget, mod_apush_bridge_replay:answer_action(error, undefined))]},
     {"a publish answered wait is due again at once, once connected",
      fun() ->
              R = mod_apush_bridge_replay:answered(<<"a">>, replay, kept([<<"a">>])),
              ?assertMatch({[], [], _}, due(10, false, R)),
              ?assertMatch({[], [{publish, <<"a">>}], _}, due(10, true, R))
      end},
     {"an answer to an id not kept changes nothing",
      fun() ->
              R = kept([<<"a">>]),
              ?assertEqual(R, mod_apush_bridge_replay:answered(<<"b">>, forget, R)),
              ?assertEqual(R, mod_apush_bridge_replay:answered(<<"b">>, replay, R))
      end}].
