%%%----------------------------------------------------------------------
%%% File    : mod_apush_bridge_replay.erl
%%% Purpose : The publishes to the component that are not answered yet
%%%
%%% mod_push sends each publish once: one held back while the component is
%%% away, one written into a connection that died, or one the component
%%% answered `wait` for a store fault would be lost. mod_apush_bridge keeps
%%% its copy here until the component answers `result` or a final error, and
%%% sends it again (the same IQ, same id) once the component is connected.
%%% The component deduplicates a message by its forwarded copy's sender and
%%% id, so a replay of one it took pushes nothing twice.
%%%
%%% Pure: no process, no clock, no ejabberd. Bounded by count, by bytes and
%%% by age; what is dropped is returned so that the caller logs and counts it.
%%% MIT licensed, part of apush-component.
%%%----------------------------------------------------------------------
-module(mod_apush_bridge_replay).

%% size/1 is this queue's, not the BIF.
-compile({no_auto_import, [size/1]}).
-export([new/0, keep/6, answered/3, due/5, size/1, answer_action/2]).

%% max_count 0 keeps nothing. Times are milliseconds.
-type limits() :: #{max_count := non_neg_integer(), max_bytes := non_neg_integer(),
                    max_age := pos_integer(), answer_timeout := pos_integer()}.
-type entry() :: #{id := binary(), stanza := term(), bytes := non_neg_integer(),
                   kept_at := integer(), sent_at := integer() | undefined}.
%% Entries by the order they were kept in (oldest first), their keys by id.
-record(replay, {entries = gb_trees:empty() :: gb_trees:tree(non_neg_integer(), entry()),
                 keys = #{} :: #{binary() => non_neg_integer()},
                 bytes = 0 :: non_neg_integer(),
                 next = 0 :: non_neg_integer()}).
-opaque replay() :: #replay{}.
-export_type([replay/0, limits/0]).

-spec new() -> replay().
new() ->
    #replay{}.

-spec size(replay()) -> non_neg_integer().
size(#replay{keys = Keys}) ->
    maps:size(Keys).

%% Keeps Stanza under Id, sent at Now (SentAt) or due once the component is
%% connected (undefined); returns the ids dropped as the oldest past the
%% bounds. An id kept already is not kept twice.
-spec keep(binary(), term(), integer() | undefined, integer(), limits(), replay()) -> {[binary()], replay()}.
keep(_Id, _Stanza, _SentAt, _Now, #{max_count := 0}, R) ->
    {[], R};
keep(Id, _Stanza, _SentAt, _Now, _Limits, #replay{keys = Keys} = R) when is_map_key(Id, Keys) ->
    {[], R};
keep(Id, Stanza, SentAt, Now, Limits, #replay{entries = Entries, keys = Keys, bytes = Bytes, next = Next}) ->
    Size = erlang:external_size(Stanza),
    Entry = #{id => Id, stanza => Stanza, bytes => Size, kept_at => Now, sent_at => SentAt},
    R = #replay{entries = gb_trees:insert(Next, Entry, Entries), keys = Keys#{Id => Next},
                bytes = Bytes + Size, next = Next + 1},
    drop_past_bounds(Limits, R, []).

drop_past_bounds(#{max_count := MaxCount, max_bytes := MaxBytes} = Limits, R, Dropped) ->
    Size = size(R),
    case Size > MaxCount orelse (R#replay.bytes > MaxBytes andalso Size > 0) of
        true ->
            {Id, R1} = drop_oldest(R),
            drop_past_bounds(Limits, R1, [Id | Dropped]);
        false ->
            {lists:reverse(Dropped), R}
    end.

drop_oldest(#replay{entries = Entries} = R) ->
    {_Key, #{id := Id}, _Rest} = gb_trees:take_smallest(Entries),
    {Id, forget(Id, R)}.

forget(Id, #replay{entries = Entries, keys = Keys, bytes = Bytes} = R) ->
    case maps:take(Id, Keys) of
        {Key, Keys1} ->
            #{bytes := Size} = gb_trees:get(Key, Entries),
            R#replay{entries = gb_trees:delete(Key, Entries), keys = Keys1, bytes = Bytes - Size};
        error ->
            R
    end.

%% The component answered Id: forget it, or (replay) make it due again.
-spec answered(binary(), forget | replay, replay()) -> replay().
answered(Id, forget, R) ->
    forget(Id, R);
answered(Id, replay, #replay{entries = Entries, keys = Keys} = R) ->
    case Keys of
        #{Id := Key} -> R#replay{entries = gb_trees:update(Key, (gb_trees:get(Key, Entries))#{sent_at => undefined},
                                                            Entries)};
        _ -> R
    end.

%% At Now: drops what is older than the age bound, makes what went
%% unanswered past the answer timeout due again, and, if the component is
%% connected, takes up to Limit due entries, oldest first, as sent at Now.
%% Returns {the dropped ids, the stanzas to send, the queue}.
-spec due(integer(), boolean(), non_neg_integer(), limits(), replay()) -> {[binary()], [term()], replay()}.
due(Now, Connected, Limit, #{max_age := MaxAge, answer_timeout := AnswerTimeout}, R) ->
    {Aged, R1} = drop_aged(Now - MaxAge, R, []),
    Entries = R1#replay.entries,
    {Sent, Entries1} =
        lists:foldl(
          fun({Key, #{sent_at := SentAt} = Entry}, {Sent, Acc}) ->
                  IsDue = SentAt == undefined orelse Now - SentAt > AnswerTimeout,
                  case Connected andalso IsDue andalso length(Sent) < Limit of
                      true -> {[maps:get(stanza, Entry) | Sent], gb_trees:update(Key, Entry#{sent_at => Now}, Acc)};
                      false when IsDue -> {Sent, gb_trees:update(Key, Entry#{sent_at => undefined}, Acc)};
                      false -> {Sent, Acc}
                  end
          end, {[], Entries}, gb_trees:to_list(Entries)),
    {Aged, lists:reverse(Sent), R1#replay{entries = Entries1}}.

drop_aged(Cutoff, #replay{entries = Entries} = R, Dropped) ->
    case gb_trees:is_empty(Entries) of
        false ->
            case gb_trees:smallest(Entries) of
                {_Key, #{kept_at := KeptAt}} when KeptAt < Cutoff ->
                    {Id, R1} = drop_oldest(R),
                    drop_aged(Cutoff, R1, [Id | Dropped]);
                _ ->
                    {lists:reverse(Dropped), R}
            end;
        true ->
            {lists:reverse(Dropped), R}
    end.

%% What an answer of Type with error {ErrorType, Condition} (or undefined) means
%% for the kept publish: the `wait` conditions that mean "not now" (the
%% component's store is away) make it due again; anything else ends it.
-spec answer_action(result | error, {atom(), atom()} | undefined) -> forget | replay.
answer_action(error, {wait, Condition}) when Condition == 'resource-constraint';
                                             Condition == 'internal-server-error';
                                             Condition == 'remote-server-timeout' ->
    replay;
answer_action(_Type, _Error) ->
    forget.
