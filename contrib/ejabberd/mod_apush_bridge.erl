%%%----------------------------------------------------------------------
%%% File    : mod_apush_bridge.erl
%%% Purpose : Tells an apush component who a push is for and what caused it
%%%
%%% Loaded beside mod_push (XEP-0357) on a virtual host. mod_push keeps
%%% everything it does (storage, enable/disable, stream management, keepalive,
%%% error handling); this module only adds to it:
%%%
%%%   * it enriches mod_push's publishes to the component in flight: a note of
%%%     {account, stanza} is set around mod_push's own hooks, and a global
%%%     filter_packet handler adds <account/> and a stripped <forwarded/> copy
%%%     of the stanza (no text, at most 16 KiB: mod_apush_bridge_stanza) to
%%%     the publish, in the pushing process itself;
%%%   * it reports registrations made and removed towards the component
%%%     (<registered/>, <unregistered/>), once mod_push has stored them, and
%%%     the registrations of a removed account; it removes a registration the
%%%     component answers with an error;
%%%   * it refuses <enable/> towards a push service that is not allowed,
%%%     towards another JID of the component's domain, or towards the
%%%     component without a publish-options form, and one whose token or form
%%%     is larger than any real one, whatever the service;
%%%   * it tells the component which accounts exist (<accounts/>);
%%%   * for accounts with a registration at the component, it reports whether
%%%     each session without push is available (<presence/>: its `show` only)
%%%     and that the account was active on one (<active/>, at most once per
%%%     account every apush_bridge_activity_interval seconds), for grace;
%%%   * it pushes reads (the account read or answered a chat on another
%%%     device, or published an XEP-0490 displayed marker) to the account's
%%%     registrations at the component that no session holds;
%%%   * while the component is not connected, it holds mod_push's publishes
%%%     back: mod_push then sees a timeout and keeps the registration, where a
%%%     remote-server-not-found would have deleted it; registration reports are
%%%     kept (in order, up to a cap) and sent when the component connects;
%%%   * it keeps every publish to the component until the component answers
%%%     it, and sends it again (same id) once the component is connected when
%%%     it was held back, answered `wait` for a store fault, or not answered
%%%     in time (mod_apush_bridge_replay: bounded by count, bytes and age).
%%%
%%% Wire format: contrib/ejabberd/README.md. MIT licensed, part of apush-component.
%%%----------------------------------------------------------------------
-module(mod_apush_bridge).
-behaviour(gen_mod).
-behaviour(gen_server).

%% gen_mod
-export([start/2, stop/1, reload/3, depends/2, mod_opt_type/1, mod_options/1, mod_doc/0]).
%% IQ handler and hooks
-export([process_iq/1, process_accounts_iq/1, decode_iq_subel/1, filter_packet/1,
         note_mam_message/7, forget_mam_message/7, note_mam_message/8, forget_mam_message/8,
         note_offline_message/1, forget_offline_message/1,
         note_c2s_stanza/3, forget_c2s_stanza/3,
         note_c2s_session_pending/1, forget_c2s_session_pending/1,
         note_c2s_info/2, forget_c2s_info/2,
         user_send_packet/1, pubsub_publish_item/6, remove_user/2,
         session_pending/1, session_resumed/1, session_removed/3,
         component_connected/1, component_disconnected/2]).
%% gen_server: the registration reports of one virtual host, in order
-export([init/1, handle_call/3, handle_cast/2, handle_info/2, terminate/2, code_change/3]).
%% The decision, pure, for the unit tests
-export([publish_action/4, report_action/3]).

-include("xmpp.hrl").
-include("logger.hrl").
-include("translate.hrl").

-define(NS_BRIDGE, <<"urn:xmpp:apush:bridge:0">>).
-define(NS_MDS, <<"urn:xmpp:mds:displayed:0">>).
%% The process dictionary key of the note: #{account := bare JID, luser,
%% lserver, stanza := xmlel() | none, set_at := monotonic milliseconds}.
-define(NOTE, {?MODULE, note}).
%% A note lives as long as the hook that set it. One left behind by a hook
%% chain that another module stopped is never trusted after this long.
-define(NOTE_MAX_AGE_MS, 1000).
%% Registration reports kept while the component is away; past it the oldest
%% is dropped (the component learns of a registration from its next push too).
-define(MAX_HELD_REPORTS, 10000).
%% The most accounts the component may ask about at once.
-define(MAX_ACCOUNTS_ASKED, 100).
%% Replays sent a second at most, and how often the queue is looked at while
%% it holds anything (never while it is empty).
-define(REPLAYS_PER_TICK, 10).
-define(REPLAY_TICK_MS, 1000).
%% Accounts whose last <active/> is remembered; past this the memory starts
%% afresh (it costs at most one report more per account).
-define(MAX_ACTIVE_ACCOUNTS, 10000).

-record(state, {host :: binary(),
                held = queue:new() :: queue:queue(fxml:xmlel()),
                dropped = 0 :: non_neg_integer(),
                replay = mod_apush_bridge_replay:new() :: mod_apush_bridge_replay:replay(),
                ticking = false :: boolean(),
                replay_counts = #{dropped_full => 0, dropped_aged => 0, replayed => 0}
                    :: #{atom() => non_neg_integer()}}).

%%%===================================================================
%%% gen_mod
%%%===================================================================

start(Host, Opts) ->
    case component(Host) of
        undefined ->
            ?ERROR_MSG("mod_apush_bridge on ~ts: apush_bridge_component is not set", [Host]),
            {error, apush_bridge_component_not_set};
        _Component ->
            gen_mod:start_child(?MODULE, Host, Opts)
    end.

stop(Host) ->
    gen_mod:stop_child(?MODULE, Host).

%%%===================================================================
%%% gen_server: hooks while it runs, and the reports of its host
%%%===================================================================

init([Host, _Opts]) ->
    process_flag(trap_exit, true),
    ets:new(active_table(Host), [named_table, public, set]),
    %% mod_push registered its handler when it started (a hard dependency):
    %% the last handler added for a namespace wins.
    gen_iq_handler:add_iq_handler(ejabberd_sm, Host, ?NS_PUSH_0, ?MODULE, process_iq),
    gen_iq_handler:add_iq_handler(ejabberd_local, Host, ?NS_BRIDGE, ?MODULE, process_accounts_iq),
    lists:foreach(fun({Hook, Fun, Seq}) -> ejabberd_hooks:add(Hook, Host, ?MODULE, Fun, Seq) end, host_hooks()),
    case gen_mod:is_loaded_elsewhere(Host, ?MODULE) of
        true -> ok;
        false -> lists:foreach(fun({Hook, Fun, Seq}) -> ejabberd_hooks:add(Hook, ?MODULE, Fun, Seq) end,
                               global_hooks())
    end,
    ?INFO_MSG("mod_apush_bridge on ~ts: bridging mod_push's publishes to ~ts", [Host, component(Host)]),
    {ok, #state{host = Host}}.

handle_call(_Request, _From, State) ->
    {reply, {error, badarg}, State}.

handle_cast({report, Payload}, #state{host = Host, held = Held} = State) ->
    {noreply, flush(State#state{held = queue:in(Payload, Held)}, component(Host))};
%% A session report is worth nothing later: the component forgets them all
%% when its link drops. It follows the registration reports held before it.
handle_cast({session_report, Payload}, #state{host = Host} = State) ->
    Component = component(Host),
    Flushed = flush(State, Component),
    ejabberd_router:is_my_route(Component) andalso
        ejabberd_router:route(#message{from = jid:make(Host), to = jid:make(Component),
                                       type = normal, sub_els = [Payload]}),
    {noreply, Flushed};
handle_cast(component_connected, #state{host = Host} = State) ->
    {noreply, flush(State, component(Host))};
handle_cast({keep, ID, IQ, Sent}, #state{host = Host, replay = Replay} = State) ->
    Now = erlang:monotonic_time(millisecond),
    SentAt = case Sent of true -> Now; false -> undefined end,
    {Dropped, Replay1} = mod_apush_bridge_replay:keep(ID, IQ, SentAt, Now, replay_limits(Host), Replay),
    State1 = count_dropped(Dropped, dropped_full, "the queue is full", State#state{replay = Replay1}),
    {noreply, start_ticking(State1)};
handle_cast({answered, ID, Action}, #state{replay = Replay} = State) ->
    {noreply, State#state{replay = mod_apush_bridge_replay:answered(ID, Action, Replay)}};
handle_cast(_Msg, State) ->
    {noreply, State}.

handle_info(replay_tick, #state{host = Host, replay = Replay} = State) ->
    Component = component(Host),
    Connected = ejabberd_router:is_my_route(Component),
    {Aged, Due, Replay1} = mod_apush_bridge_replay:due(erlang:monotonic_time(millisecond), Connected,
                                                       ?REPLAYS_PER_TICK, replay_limits(Host), Replay),
    State1 = count_dropped(Aged, dropped_aged, "older than the age bound", State#state{replay = Replay1}),
    Kept = mod_apush_bridge_replay:size(Replay1),
    lists:foreach(fun(#iq{id = ID} = IQ) ->
                          ?INFO_MSG("Replaying push ~ts to ~ts (~B kept)", [ID, Component, Kept]),
                          ejabberd_router:route(IQ)
                  end, Due),
    #{replayed := Replayed} = Counts = State1#state.replay_counts,
    State2 = State1#state{replay_counts = Counts#{replayed := Replayed + length(Due)}, ticking = false},
    {noreply, start_ticking(State2)};
handle_info(_Info, State) ->
    {noreply, State}.

terminate(_Reason, #state{host = Host}) ->
    lists:foreach(fun({Hook, Fun, Seq}) -> ejabberd_hooks:delete(Hook, Host, ?MODULE, Fun, Seq) end,
                  host_hooks()),
    case gen_mod:is_loaded_elsewhere(Host, ?MODULE) of
        true -> ok;
        false -> lists:foreach(fun({Hook, Fun, Seq}) -> ejabberd_hooks:delete(Hook, ?MODULE, Fun, Seq) end,
                               global_hooks())
    end,
    gen_iq_handler:remove_iq_handler(ejabberd_local, Host, ?NS_BRIDGE),
    %% Give the push namespace back to mod_push if it still runs.
    case gen_mod:is_loaded(Host, mod_push) of
        true -> gen_iq_handler:add_iq_handler(ejabberd_sm, Host, ?NS_PUSH_0, mod_push, process_iq);
        false -> gen_iq_handler:remove_iq_handler(ejabberd_sm, Host, ?NS_PUSH_0)
    end.

code_change(_OldVsn, State, _Extra) ->
    {ok, State}.

%% The tick runs only while a publish is kept: a server with nothing
%% unanswered does no work for it.
start_ticking(#state{ticking = false, replay = Replay} = State) ->
    case mod_apush_bridge_replay:size(Replay) of
        0 -> State;
        _ -> erlang:send_after(?REPLAY_TICK_MS, self(), replay_tick),
             State#state{ticking = true}
    end;
start_ticking(State) ->
    State.

count_dropped([], _Counter, _Reason, State) ->
    State;
count_dropped(IDs, Counter, Reason, #state{host = Host, replay_counts = Counts} = State) ->
    Counts1 = maps:update_with(Counter, fun(N) -> N + length(IDs) end, Counts),
    #{dropped_full := Full, dropped_aged := Aged} = Counts1,
    lists:foreach(fun(ID) ->
                          ?WARNING_MSG("Dropped push ~ts of ~ts from the replay queue (~ts); ~B dropped so far",
                                       [ID, Host, Reason, Full + Aged])
                  end, IDs),
    State#state{replay_counts = Counts1}.

replay_limits(Host) ->
    #{max_count => gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_replay_max_count),
      max_bytes => gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_replay_max_bytes),
      max_age => 1000 * gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_replay_max_age),
      answer_timeout => 1000 * gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_answer_timeout)}.

%% Sends the held reports, oldest first, while the component is connected.
flush(#state{host = Host, held = Held, dropped = Dropped} = State, Component) ->
    case report_action(queue:len(Held), ejabberd_router:is_my_route(Component), ?MAX_HELD_REPORTS) of
        send ->
            {{value, Payload}, Rest} = queue:out(Held),
            ejabberd_router:route(#message{from = jid:make(Host), to = jid:make(Component),
                                           type = normal, sub_els = [Payload]}),
            flush(State#state{held = Rest}, Component);
        hold ->
            State;
        drop_oldest ->
            Dropped == 0 andalso
                ?WARNING_MSG("apush component ~ts is away and ~B registration reports of ~ts wait for it: "
                             "the oldest are dropped (its next pushes report them)",
                             [Component, ?MAX_HELD_REPORTS, Host]),
            flush(State#state{held = queue:drop(Held), dropped = Dropped + 1}, Component);
        idle ->
            Dropped > 0 andalso
                ?WARNING_MSG("apush component ~ts is back; ~B registration reports of ~ts were dropped while "
                             "it was away", [Component, Dropped, Host]),
            State#state{dropped = 0}
    end.

%% What to do with the held reports: send the oldest (the component is
%% connected), hold them, or drop the oldest (too many are held). Pure.
report_action(0, _Connected, _Max) -> idle;
report_action(_Held, true, _Max) -> send;
report_action(Held, false, Max) when Held > Max -> drop_oldest;
report_action(_Held, false, _Max) -> hold.

%% Options are read where they are used: a reload needs nothing else.
reload(_Host, _NewOpts, _OldOpts) ->
    ok.

depends(_Host, _Opts) ->
    [{mod_push, hard}].

%% Each note is set one step before mod_push's own handler on the same hook
%% and forgotten one step after it (ejabberd runs lower numbers first).
host_hooks() ->
    [{store_mam_message, note_mam_message, 49},
     {store_mam_message, forget_mam_message, 51},
     {offline_message_hook, note_offline_message, 54},
     {offline_message_hook, forget_offline_message, 56},
     {c2s_handle_send, note_c2s_stanza, 49},
     {c2s_handle_send, forget_c2s_stanza, 51},
     {c2s_session_pending, note_c2s_session_pending, 49},
     {c2s_session_pending, forget_c2s_session_pending, 51},
     %% mod_push_keepalive's wakes come from here.
     {c2s_handle_info, note_c2s_info, 49},
     {c2s_handle_info, forget_c2s_info, 51},
     %% Late, after mod_mam (88) marked what it archived and mod_push pushed it.
     {user_send_packet, user_send_packet, 95},
     {pubsub_publish_item, pubsub_publish_item, 50},
     %% Before mod_push (50) forgets the account's registrations.
     {remove_user, remove_user, 49},
     {c2s_session_pending, session_pending, 60},
     {c2s_session_resumed, session_resumed, 60},
     {sm_remove_connection_hook, session_removed, 50}].

global_hooks() ->
    [{filter_packet, filter_packet, 50},
     {component_connected, component_connected, 50},
     {component_disconnected, component_disconnected, 50}].

mod_opt_type(apush_bridge_component) ->
    econf:domain();
mod_opt_type(apush_bridge_allowed_services) ->
    econf:list(econf:domain(), [unique]);
mod_opt_type(apush_bridge_forwarded_limit) ->
    econf:int(1024, 1024 * 1024);
mod_opt_type(apush_bridge_replay_max_count) ->
    econf:non_neg_int();
mod_opt_type(apush_bridge_replay_max_bytes) ->
    econf:non_neg_int();
mod_opt_type(apush_bridge_replay_max_age) ->
    econf:pos_int();
mod_opt_type(apush_bridge_answer_timeout) ->
    econf:pos_int();
mod_opt_type(apush_bridge_activity_interval) ->
    econf:int(1, 3600).

mod_options(_Host) ->
    [{apush_bridge_component, undefined},
     {apush_bridge_allowed_services, []},
     {apush_bridge_forwarded_limit, mod_apush_bridge_stanza:default_limit()},
     {apush_bridge_replay_max_count, 1000},
     {apush_bridge_replay_max_bytes, 4 * 1024 * 1024},
     {apush_bridge_replay_max_age, 300},
     {apush_bridge_answer_timeout, 30},
     {apush_bridge_activity_interval, 10}].

mod_doc() ->
    #{desc =>
          [?T("Bridges mod_push to an apush component (an XEP-0114 component that seals "
              "push summaries for the device). Every publish mod_push sends to the component "
              "gets the account it is for and a stripped copy of the stanza that caused it "
              "(no message text); registrations are reported to the component once stored; "
              "reads on another device are pushed to devices that no session holds; and while "
              "the component is not connected, publishes are held back so that mod_push keeps "
              "its registrations."),
           ?T("Requires 'mod_push' with 'include_sender: true'. XEP-0490 reads need "
              "'mod_pubsub' with the 'pep' plugin.")],
      opts =>
          [{apush_bridge_component,
            #{value => ?T("Domain"),
              desc => ?T("The component's JID. Required.")}},
           {apush_bridge_allowed_services,
            #{value => "[Domain, ...]",
              desc => ?T("The push services a client may enable push towards; an 'enable' "
                         "for any other is refused with 'not-allowed'. Empty (the default) "
                         "allows all. The component is always allowed.")}},
           {apush_bridge_forwarded_limit,
            #{value => ?T("Bytes"),
              desc => ?T("The largest stripped copy forwarded with a push; past it the push "
                         "names the account alone. The default is 16384.")}},
           {apush_bridge_replay_max_count,
            #{value => ?T("Number"),
              desc => ?T("The most publishes kept until the component answers them, to send "
                         "again; past it the oldest is dropped (logged). 0 keeps none. "
                         "The default is 1000.")}},
           {apush_bridge_replay_max_bytes,
            #{value => ?T("Bytes"),
              desc => ?T("The most bytes of publishes kept (as Erlang holds them). "
                         "The default is 4194304.")}},
           {apush_bridge_replay_max_age,
            #{value => ?T("Seconds"),
              desc => ?T("A kept publish older than this is dropped, not sent again. "
                         "The default is 300.")}},
           {apush_bridge_answer_timeout,
            #{value => ?T("Seconds"),
              desc => ?T("A publish not answered within this long is sent again. "
                         "The default is 30.")}},
           {apush_bridge_activity_interval,
            #{value => ?T("Seconds"),
              desc => ?T("At most one report of an account's activity on a device without "
                         "push within this many seconds. The default is 10.")}}],
      example =>
          ["modules:",
           "  mod_push:",
           "    include_sender: true",
           "  mod_apush_bridge:",
           "    apush_bridge_component: apush.example.org",
           "    apush_bridge_allowed_services: [apush.example.org]"]}.

component(Host) ->
    gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_component).

%%%===================================================================
%%% Registrations
%%%===================================================================

%% Takes over mod_push's urn:xmpp:push:0 handler: refuses what must not be
%% stored, lets mod_push store or remove the rest, and reports to the
%% component only what mod_push answered with a result.
process_iq(#iq{type = set, from = #jid{lserver = Host}, lang = Lang,
               sub_els = [#push_enable{jid = Service, node = Node, xdata = XData}]} = IQ) ->
    Component = component(Host),
    LService = jid:tolower(Service),
    Form = case XData of undefined -> undefined; _ -> xmpp:encode(XData) end,
    case is_allowed(Host, LService, Component) andalso
         mod_apush_bridge_stanza:enable_refusal(LService, Component, Node, Form) of
        false ->
            ?INFO_MSG("Refusing push registration of ~ts towards ~ts: not allowed",
                      [jid:encode(IQ#iq.from), jid:encode(Service)]),
            xmpp:make_error(IQ, xmpp:err_not_allowed(?T("This push service is not allowed here"), Lang));
        none when LService == {<<>>, Component, <<>>} ->
            Answer = mod_push:process_iq(IQ),
            report_stored(Answer, IQ, Host, Component, Node, XData),
            Answer;
        none ->
            mod_push:process_iq(IQ);
        Refusal ->
            ?INFO_MSG("Refusing push registration of ~ts towards ~ts: ~ts",
                      [jid:encode(IQ#iq.from), jid:encode(Service), Refusal]),
            xmpp:make_error(IQ, xmpp:err_not_acceptable(Refusal, Lang))
    end;
process_iq(#iq{type = set, from = #jid{lserver = Host}, sub_els = [#push_disable{jid = Service, node = Node}]} = IQ) ->
    Answer = mod_push:process_iq(IQ),
    Component = component(Host),
    case {Answer, jid:tolower(Service)} of
        {#iq{type = result}, {<<>>, Component, <<>>}} ->
            send_to_component(Host,
                              unregistered(account(IQ#iq.from), Component, Node));
        _ ->
            ok
    end,
    Answer;
process_iq(IQ) ->
    mod_push:process_iq(IQ).

is_allowed(Host, {_, Domain, _}, Component) ->
    case gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_allowed_services) of
        [] -> true;
        %% The component is always allowed: listing other services must not
        %% lock out the bridge's own.
        Allowed -> Domain == Component orelse lists:member(Domain, Allowed)
    end.

report_stored(#iq{type = result}, #iq{from = From}, Host, Component, Node, XData) ->
    Enable = xmpp:encode(#push_enable{jid = jid:make(Component), node = Node, xdata = XData}),
    send_to_component(Host,
                      #xmlel{name = <<"registered">>,
                             attrs = [{<<"xmlns">>, ?NS_BRIDGE}, {<<"account">>, account(From)},
                                      {<<"resource">>, From#jid.resource}],
                             children = [Enable]});
report_stored(_Error, _IQ, _Host, _Component, _Node, _XData) ->
    ok.

unregistered(Account, Component, Node) ->
    Disable = #xmlel{name = <<"disable">>,
                     attrs = [{<<"xmlns">>, ?NS_PUSH_0}, {<<"jid">>, Component}]
                             ++ [{<<"node">>, Node} || Node /= <<>>, Node /= undefined]},
    #xmlel{name = <<"unregistered">>, attrs = [{<<"xmlns">>, ?NS_BRIDGE}, {<<"account">>, Account}],
           children = [Disable]}.

%% The component answers a <registered/> it cannot use (say, its form names
%% no push module) with an error message that echoes it: mod_push forgets that
%% registration too, rather than push to it in vain. Only the component's own
%% answer for an account of this host counts; a wait error (its store is away)
%% says nothing about the registration.
forget_refused(Message, Host, Component) ->
    case mod_apush_bridge_stanza:refused_registration(xmpp:encode(Message)) of
        none ->
            ok;
        {Account, Token} ->
            case local_user(Account, Host) of
                false ->
                    ok;
                LUser ->
                    ?INFO_MSG("The component refused push registration ~ts of ~ts: removing it",
                              [mod_apush_bridge_stanza:fingerprint(Token), Account]),
                    forget_registrations(LUser, Host, Component, Token)
            end
    end.

%% Removes the account's registrations towards the component with Token.
%% mod_push deletes by session (the registrations a c2s session made share its
%% id), so those of the same session that do not match are stored again.
forget_registrations(LUser, LServer, Component, Token) ->
    Mod = gen_mod:db_mod(LServer, mod_push),
    case Mod:lookup_sessions(LUser, LServer) of
        {ok, Clients} ->
            Refused = [ID || {ID, {<<>>, Service, <<>>}, Node, _XData} <- Clients, Service == Component, Node == Token],
            lists:foreach(
              fun(ID) ->
                      mod_push:delete_session(LUser, LServer, ID),
                      [Mod:store_session(LUser, LServer, ID, jid:make(LService), Node, XData)
                       || {SameID, LService, Node, XData} <- Clients, SameID == ID,
                          {LService, Node} /= {{<<>>, Component, <<>>}, Token}]
              end, lists:usort(Refused));
        _ ->
            ok
    end.

%% The component asks which of the accounts it holds registrations for still
%% exist, so that the operator can prune the others.
process_accounts_iq(#iq{type = get, from = From, to = #jid{lserver = Host}, lang = Lang,
                        sub_els = [#xmlel{name = <<"accounts">>} = Query]} = IQ) ->
    Component = component(Host),
    case {jid:tolower(From), mod_apush_bridge_stanza:asked_accounts(Query, ?MAX_ACCOUNTS_ASKED)} of
        {{<<>>, Component, <<>>}, {ok, Asked}} ->
            LUsers = [local_user(JID, Host) || JID <- Asked],
            case lists:member(false, LUsers) of
                false ->
                    xmpp:make_iq_result(IQ, mod_apush_bridge_stanza:accounts_answer(
                                              [{JID, ejabberd_auth:user_exists(LUser, Host)}
                                               || {JID, LUser} <- lists:zip(Asked, LUsers)]));
                true ->
                    xmpp:make_error(IQ, xmpp:err_bad_request(
                                          ?T("Each account must be a bare JID of this server"), Lang))
            end;
        {{<<>>, Component, <<>>}, too_many} ->
            xmpp:make_error(IQ, xmpp:err_bad_request(?T("Too many accounts at once"), Lang));
        _ ->
            %% cancel, as Prosody's bridge answers (the library's default is auth).
            xmpp:make_error(IQ, (xmpp:err_forbidden(?T("Only the push component may ask"), Lang))#stanza_error{type = cancel})
    end;
process_accounts_iq(#iq{lang = Lang} = IQ) ->
    xmpp:make_error(IQ, xmpp:err_service_unavailable(?T("No such query here"), Lang)).

%% gen_iq_handler decodes a query with this before it calls the module's
%% handlers: the bridge's own namespace is unknown to the xmpp library.
decode_iq_subel(El) ->
    case xmpp:get_ns(El) of
        ?NS_BRIDGE -> El;
        _ -> xmpp:decode(El)
    end.

%% The username of JID when it is a bare JID of Host, else false.
local_user(JID, Host) ->
    try jid:decode(JID) of
        #jid{luser = LUser, lserver = Host, lresource = <<>>} when LUser /= <<>> -> LUser;
        _ -> false
    catch _:_ -> false
    end.

%% mod_push forgets a removed account's registrations: so does the component.
remove_user(LUser, LServer) ->
    Component = component(LServer),
    send_to_component(LServer,
                      unregistered(jid:encode(jid:make(LUser, LServer)), Component, <<>>)).

%% Reports go through the host's process, in order: at once while the
%% component is connected, else when it connects (ejabberd would otherwise try
%% to reach its domain over s2s, and the report would be lost).
send_to_component(Host, Payload) ->
    gen_server:cast(gen_mod:get_module_proc(Host, ?MODULE), {report, Payload}).

account(#jid{} = JID) ->
    jid:encode(jid:remove_resource(jid:tolower(JID))).

%%%===================================================================
%%% Notes around mod_push's hooks
%%%===================================================================

note_mam_message(Pkt, LUser, LServer, _Peer, _Nick, chat, _Dir) ->
    set_note(LUser, LServer, with_stanza_id(Pkt, LUser, LServer)),
    Pkt;
note_mam_message(Pkt, _LUser, _LServer, _Peer, _Nick, _Type, _Dir) ->
    Pkt.

forget_mam_message(Pkt, _LUser, _LServer, _Peer, _Nick, _Type, _Dir) ->
    forget_note(),
    Pkt.

%% The bridge's one difference between ejabberd releases: 26.03 and later add
%% whether a room's archive stored the message (these /8 handlers). 23.01 and
%% 24.12 call the /7 ones, and every hook the bridge uses has the same name,
%% arguments and priority in both.
note_mam_message(Pkt, LUser, LServer, Peer, Nick, Type, Dir, _StoredInMucMam) ->
    note_mam_message(Pkt, LUser, LServer, Peer, Nick, Type, Dir).

forget_mam_message(Pkt, LUser, LServer, Peer, Nick, Type, Dir, _StoredInMucMam) ->
    forget_mam_message(Pkt, LUser, LServer, Peer, Nick, Type, Dir).

note_offline_message({offlined, #message{to = #jid{luser = LUser, lserver = LServer}} = Msg} = Acc) ->
    set_note(LUser, LServer, Msg),
    Acc;
note_offline_message(Acc) ->
    Acc.

forget_offline_message(Acc) ->
    forget_note(),
    Acc.

%% mod_push pushes only for a session with push enabled that waits for
%% resumption; no other session's stanzas are noted.
note_c2s_stanza(#{push_enabled := true, mgmt_state := pending, jid := #jid{luser = LUser, lserver = LServer}} = State,
                Pkt, _SendResult) ->
    set_note(LUser, LServer, Pkt),
    State;
note_c2s_stanza(State, _Pkt, _SendResult) ->
    State.

forget_c2s_stanza(State, _Pkt, _SendResult) ->
    forget_note(),
    State.

%% mod_push pushes for the first incoming chat message of the queue, if any.
note_c2s_session_pending(#{push_enabled := true, jid := #jid{luser = LUser, lserver = LServer},
                           mgmt_queue := Queue} = State) ->
    Pkt = case mod_stream_mgmt:queue_find(fun mod_push:is_incoming_chat_msg/1, Queue) of
              none -> none;
              Found -> Found
          end,
    set_note(LUser, LServer, Pkt),
    State;
note_c2s_session_pending(State) ->
    State.

forget_c2s_session_pending(State) ->
    forget_note(),
    State.

note_c2s_info(#{push_enabled := true, jid := #jid{luser = LUser, lserver = LServer}} = State, _Info) ->
    set_note(LUser, LServer, none),
    State;
note_c2s_info(State, _Info) ->
    State.

forget_c2s_info(State, _Info) ->
    forget_note(),
    State.

set_note(LUser, LServer, Pkt) ->
    Stanza = case Pkt of
                 #xmlel{} -> Pkt;
                 #message{} -> xmpp:encode(Pkt);
                 _ -> none
             end,
    put(?NOTE, #{account => jid:encode(jid:make(LUser, LServer)), luser => LUser, lserver => LServer,
                 stanza => Stanza, set_at => erlang:monotonic_time(millisecond)}).

forget_note() ->
    erase(?NOTE),
    ok.

%% mod_mam adds <stanza-id/> after the push went out; the id the app fetches
%% from the archive is known already.
with_stanza_id(#message{meta = #{stanza_id := ID}} = Pkt, LUser, LServer) when is_integer(ID) ->
    StanzaID = #stanza_id{by = jid:make(LUser, LServer), id = integer_to_binary(ID)},
    xmpp:set_els(Pkt, [StanzaID | xmpp:get_els(Pkt)]);
with_stanza_id(Pkt, _LUser, _LServer) ->
    Pkt.

%%%===================================================================
%%% The rewrite of mod_push's publish
%%%===================================================================

filter_packet(#iq{type = set, from = #jid{luser = <<>>, lresource = <<>>, lserver = Host}} = IQ) ->
    case gen_mod:is_loaded(Host, ?MODULE) of
        true ->
            Component = component(Host),
            case publish_action(IQ, Component, get(?NOTE), erlang:monotonic_time(millisecond)) of
                pass -> IQ;
                {publish, Node, Note} -> bridge(IQ, Host, Component, Node, Note)
            end;
        false ->
            IQ
    end;
%% The component's answer to a publish: the kept copy is forgotten or, after
%% a wait for a store fault, sent again. mod_push still sees the answer.
filter_packet(#iq{type = Type, id = ID, from = #jid{luser = <<>>, lresource = <<>>, lserver = From},
                  to = #jid{luser = <<>>, lresource = <<>>, lserver = Host}} = IQ)
  when Type == result; Type == error ->
    case gen_mod:is_loaded(Host, ?MODULE) andalso component(Host) of
        From ->
            Error = case xmpp:get_error(IQ) of
                        #stanza_error{type = ErrorType, reason = Reason} -> {ErrorType, Reason};
                        undefined -> undefined
                    end,
            gen_server:cast(gen_mod:get_module_proc(Host, ?MODULE),
                            {answered, ID, mod_apush_bridge_replay:answer_action(Type, Error)});
        _ ->
            ok
    end,
    IQ;
%% The component's answer to a <registered/> it cannot use (forget_refused/3).
filter_packet(#message{type = error, from = #jid{luser = <<>>, lresource = <<>>, lserver = From},
                       to = #jid{luser = <<>>, lresource = <<>>, lserver = Host}} = Message) ->
    case gen_mod:is_loaded(Host, ?MODULE) andalso component(Host) of
        From -> forget_refused(Message, Host, From);
        _ -> ok
    end,
    Message;
filter_packet(Stanza) ->
    Stanza.

%% Whether IQ is mod_push's publish to Component (an IQ holding one item with
%% a urn:xmpp:push:0 notification, as mod_push builds it: records), and the
%% note to enrich it with: none unless the note is fresh and of the same
%% server. Pure.
publish_action(#iq{from = #jid{lserver = Host},
                   to = #jid{luser = <<>>, lresource = <<>>, lserver = Component},
                   sub_els = [#pubsub{publish = #ps_publish{node = Node,
                                                            items = [#ps_item{sub_els = [#push_notification{}]}]}}]},
               Component, Note, Now) when is_binary(Component) ->
    case Note of
        #{lserver := Host, set_at := SetAt} when Now - SetAt =< ?NOTE_MAX_AGE_MS -> {publish, Node, Note};
        _ -> {publish, Node, none}
    end;
publish_action(_Stanza, _Component, _Note, _Now) ->
    pass.

bridge(IQ, Host, Component, Node, Note) ->
    Bridged = enrich(IQ, Host, Component, Node, Note),
    Connected = ejabberd_router:is_my_route(Component),
    gen_server:cast(gen_mod:get_module_proc(Host, ?MODULE), {keep, Bridged#iq.id, Bridged, Connected}),
    case Connected of
        false ->
            %% mod_push sees a timeout and keeps the registration; the bridge
            %% sends its copy once the component is connected.
            ?DEBUG("apush component ~ts is not connected: a push is held back", [Component]),
            drop;
        true ->
            Bridged
    end.

enrich(IQ, _Host, _Component, _Node, none) ->
    IQ;
enrich(IQ, Host, Component, Node, #{luser := LUser, account := Account, stanza := Stanza}) ->
    %% A note never names an account the publish is not for.
    Mod = gen_mod:db_mod(Host, mod_push),
    case Mod:lookup_session(LUser, Host, jid:make(Component), Node) of
        {ok, _} ->
            Limit = gen_mod:get_module_opt(Host, ?MODULE, apush_bridge_forwarded_limit),
            enriched(IQ, fun(Notification) ->
                                 mod_apush_bridge_stanza:bridged_notification(
                                   xmpp:encode(Notification), Account, Stanza, Limit)
                         end);
        _ ->
            IQ
    end.

enriched(#iq{sub_els = [#pubsub{publish = #ps_publish{items = [#ps_item{sub_els = [N]} = Item]} = Publish} = PubSub]} = IQ,
         Enrich) ->
    IQ#iq{sub_els = [PubSub#pubsub{publish = Publish#ps_publish{items = [Item#ps_item{sub_els = [Enrich(N)]}]}}]}.

component_connected(ComponentHost) ->
    lists:foreach(fun(VHost) -> gen_server:cast(gen_mod:get_module_proc(VHost, ?MODULE), component_connected) end,
                  bridged_hosts(ComponentHost)).

%% ejabberd_service unregisters the closed connection's route before this hook: another
%% instance of the component (several may connect for one JID) still carries the pushes.
component_disconnected(ComponentHost, _Reason) ->
    case {bridged_hosts(ComponentHost), ejabberd_router:is_my_route(ComponentHost)} of
        {[], _} -> ok;
        {_, true} -> ?INFO_MSG("a connection of apush component ~ts closed; another carries its pushes",
                               [ComponentHost]);
        {VHosts, false} -> ?WARNING_MSG("apush component ~ts disconnected: pushes of ~ts are held back "
                               "(mod_push keeps its registrations) until it connects again",
                               [ComponentHost, lists:join(<<", ">>, VHosts)])
    end.

%% The virtual hosts whose bridge talks to ComponentHost.
bridged_hosts(ComponentHost) ->
    [VHost || VHost <- ejabberd_option:hosts(), gen_mod:is_loaded(VHost, ?MODULE), component(VHost) == ComponentHost].

%%%===================================================================
%%% Reads for devices that no session holds
%%%===================================================================

%% A read (a message with a body or a displayed marker to someone else) that
%% mod_mam archived was pushed by mod_push itself, with a note. Anything else
%% is pushed here, once the account is known to have a registration that no
%% session holds (most senders have none: their stanzas are not encoded).
user_send_packet({#message{type = Type, to = #jid{} = To} = Pkt,
                  #{jid := #jid{luser = LUser, lserver = LServer}} = C2SState} = Acc)
  when Type /= error, Type /= headline ->
    Own = {LUser, LServer},
    case {xmpp:get_meta(Pkt, mam_archived, false), To#jid.luser, To#jid.lserver} of
        {true, _, _} -> ok;
        {false, ToUser, ToServer} when {ToUser, ToServer} == Own -> ok;
        {false, _, _} -> push_read(LUser, LServer, fun(Account) ->
                                                          Stanza = xmpp:encode(Pkt),
                                                          mod_apush_bridge_stanza:is_read(Stanza, Account)
                                                              andalso {Stanza, Pkt}
                                                  end)
    end,
    {To#jid.luser, To#jid.lserver} /= Own andalso not pushed(C2SState)
        andalso note_activity(LUser, LServer, fun() -> mod_apush_bridge_stanza:is_activity(xmpp:encode(Pkt)) end),
    Acc;
%% The account's own presence broadcast (to its bare JID, or to none).
user_send_packet({#presence{type = Type, to = To} = Pkt,
                  #{jid := #jid{luser = LUser, lserver = LServer}} = C2SState})
  when Type == available; Type == unavailable ->
    case To of
        #jid{luser = LUser, lserver = LServer, lresource = <<>>} ->
            {Pkt, report_session(C2SState, mod_apush_bridge_stanza:is_available(xmpp:encode(Pkt)))};
        undefined ->
            {Pkt, report_session(C2SState, mod_apush_bridge_stanza:is_available(xmpp:encode(Pkt)))};
        _ ->
            {Pkt, C2SState}
    end;
user_send_packet(Acc) ->
    Acc.

%%%===================================================================
%%% The account's other sessions (grace)
%%%===================================================================

%% The component holds an account's message pushes while another of its
%% sessions is available, or was active lately. Only sessions without push
%% count: one that enabled push (a phone's, hibernated or not) is the device
%% being pushed to. Only the presence's `show` is read, and only accounts with
%% a registration at the component are reported. Every report the component
%% misses only lets pushes through.

%% Whether the session enabled push (mod_push marks its c2s state).
pushed(C2SState) ->
    maps:get(push_enabled, C2SState, false).

%% Reports the session's availability when it changed from what the component
%% last heard of it (nothing heard: not available); returns the state, which
%% remembers it (and ejabberd_sm's session info, for the session's end).
report_session(#{jid := #jid{luser = LUser, lserver = LServer, lresource = Resource}} = C2SState, Available0) ->
    Available = Available0 andalso not pushed(C2SState),
    case maps:get(apush_available, C2SState, false) of
        Available ->
            C2SState;
        _ when Available ->
            case registered_at_component(LUser, LServer) of
                true -> report_presence(LUser, LServer, Resource, true),
                        C2SState#{apush_available => true};
                false -> C2SState
            end;
        _ ->
            report_presence(LUser, LServer, Resource, false),
            C2SState#{apush_available => false}
    end;
report_session(C2SState, _Available) ->
    C2SState.

report_presence(LUser, LServer, Resource, Available) ->
    ejabberd_sm:set_user_info(LUser, LServer, Resource, apush_available, Available),
    send_session_report(LServer, mod_apush_bridge_stanza:presence_report(
                                   jid:encode(jid:make(LUser, LServer)), Resource, Available)).

%% A session that hibernates (XEP-0198: the server keeps it, no one reads it)
%% ends its hold; one that resumes is what its presence says again.
session_pending(C2SState) ->
    report_session(C2SState, false).

session_resumed(#{pres_last := Presence} = C2SState) ->
    report_session(C2SState, mod_apush_bridge_stanza:is_available(xmpp:encode(Presence)));
session_resumed(C2SState) ->
    C2SState.

%% A session that left without an unavailable presence ends its hold.
session_removed(_SID, #jid{luser = LUser, lserver = LServer, lresource = Resource}, Info) ->
    case proplists:get_value(apush_available, Info, false) of
        true -> send_session_report(LServer, mod_apush_bridge_stanza:presence_report(
                                               jid:encode(jid:make(LUser, LServer)), Resource, false));
        false -> ok
    end.

registered_at_component(LUser, LServer) ->
    Component = component(LServer),
    Mod = gen_mod:db_mod(LServer, mod_push),
    case Mod:lookup_sessions(LUser, LServer) of
        {ok, Clients} -> lists:any(fun({_ID, {<<>>, Service, <<>>}, _Node, _XData}) -> Service == Component end,
                                   Clients);
        _ -> false
    end.

%% The account was active on a session without push (IsActivity tells, asked
%% only when it would be reported): <active/>, at most once per account every
%% apush_bridge_activity_interval seconds.
note_activity(LUser, LServer, IsActivity) ->
    Table = active_table(LServer),
    Now = erlang:monotonic_time(second),
    Interval = gen_mod:get_module_opt(LServer, ?MODULE, apush_bridge_activity_interval),
    case ets:lookup(Table, LUser) of
        [{_, Last}] when Now - Last < Interval ->
            ok;
        _ ->
            case IsActivity() of
                false ->
                    ok;
                true ->
                    ets:info(Table, size) >= ?MAX_ACTIVE_ACCOUNTS andalso ets:delete_all_objects(Table),
                    ets:insert(Table, {LUser, Now}),
                    registered_at_component(LUser, LServer) andalso
                        send_session_report(LServer, mod_apush_bridge_stanza:active_report(
                                                       jid:encode(jid:make(LUser, LServer))))
            end
    end.

active_table(Host) ->
    gen_mod:get_module_proc(Host, apush_bridge_active).

send_session_report(Host, Payload) ->
    gen_server:cast(gen_mod:get_module_proc(Host, ?MODULE), {session_report, Payload}).

%% XEP-0490: a displayed marker published to the account's own PEP node.
pubsub_publish_item(LServer, ?NS_MDS, Publisher, #jid{luser = LUser, lserver = LServer, lresource = <<>>},
                    ItemId, _Payload) when LUser /= <<>> ->
    Account = jid:encode(jid:make(LUser, LServer)),
    case jid:encode(jid:remove_resource(jid:tolower(Publisher))) of
        Account ->
            push_read(LUser, LServer, fun(_) ->
                                              Notice = mod_apush_bridge_stanza:mds_notice(Account, ItemId),
                                              {Notice, xmpp:decode(Notice)}
                                      end),
            Pushed = lists:keymember(push_id, 1, ejabberd_sm:get_user_info(LUser, LServer, Publisher#jid.lresource)),
            Pushed orelse note_activity(LUser, LServer, fun() -> true end);
        _ ->
            ok
    end;
pubsub_publish_item(_ServerHost, _Node, _Publisher, _Service, _ItemId, _Payload) ->
    ok.

%% Read gives the stanza (as XML, and as mod_push takes it) or false when it
%% is no read after all; it is asked only when there is someone to push to.
push_read(LUser, LServer, Read) ->
    case unheld_registrations(LUser, LServer) of
        [] ->
            ok;
        Clients ->
            case Read(jid:encode(jid:make(LUser, LServer))) of
                false ->
                    ok;
                {Stanza, Pkt} ->
                    ?DEBUG("Pushing a read of ~ts@~ts", [LUser, LServer]),
                    set_note(LUser, LServer, Stanza),
                    try mod_push:notify(LUser, LServer, Clients, Pkt, send)
                    after forget_note()
                    end
            end
    end.

%% The account's registrations at the component that no session (live or
%% waiting for resumption) holds.
unheld_registrations(LUser, LServer) ->
    Component = component(LServer),
    Mod = gen_mod:db_mod(LServer, mod_push),
    case Mod:lookup_sessions(LUser, LServer) of
        {ok, Clients} ->
            Held = [ID || {_, Info} <- ejabberd_sm:get_user_info(LUser, LServer),
                          {push_id, ID} <- Info],
            [Client || {ID, {<<>>, Service, <<>>}, _Node, _XData} = Client <- Clients,
                       Service == Component, not lists:member(ID, Held)];
        _ ->
            []
    end.
