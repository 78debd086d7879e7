-- The price the public sees (docs/decisions.md, "A shown price that does not fit"): a local product's own price; a
-- source product's price x (1 + markup/100) rounded up to the whole currency unit, then + the override's adjustment,
-- never below 0, or the override's fixed price instead of all of it. numeric throughout: no float touches money. A
-- result numeric(18,2) cannot hold (a huge source price, a markup raised after the sync) is NULL, never an overflow
-- error: product_visible_at then hides the product. The limit is MONEY_LIMIT of src/shared/money.ts. A source
-- product's price is NULL too when the markup is NULL or negative: price_markup_percent is 0 or more
-- (src/settings/registry.ts), and NULL arithmetic would otherwise end in GREATEST(0, NULL), a price of 0.
-- LANGUAGE sql, IMMUTABLE, one expression and no FROM: the planner inlines it into the catalogue queries
-- (src/catalog/queries.ts) and the order function, so it costs what the expression costs.
CREATE OR REPLACE FUNCTION product_shown_price(
  p_source_id text,
  p_price numeric,
  p_fixed_price numeric,
  p_price_adjust numeric,
  p_markup numeric
) RETURNS numeric
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT CASE
    WHEN (p_source_id IS NULL OR p_markup >= 0)
     AND (CASE WHEN p_source_id IS NULL THEN p_price
          ELSE GREATEST(0, COALESCE(p_fixed_price, CEIL(p_price * (100 + p_markup) / 100) + COALESCE(p_price_adjust, 0))) END)
         < 10000000000000000::numeric
    THEN (CASE WHEN p_source_id IS NULL THEN p_price
          ELSE GREATEST(0, COALESCE(p_fixed_price, CEIL(p_price * (100 + p_markup) / 100) + COALESCE(p_price_adjust, 0))) END)::numeric(18, 2)
  END
$$;
