-- Visible, and its price at the current markup can be shown (p_shown_price: product_shown_price): what the public
-- lists, reads and orders. Inlined by the planner like the two functions it joins.
CREATE OR REPLACE FUNCTION product_visible_at(
  p_hidden boolean,
  p_missing boolean,
  p_override_hidden boolean,
  p_category_missing boolean,
  p_category_override_hidden boolean,
  p_source_id text,
  p_source_stock integer,
  p_source_status text,
  p_hide_out_of_stock boolean,
  p_shown_price numeric
) RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT product_visible(p_hidden, p_missing, p_override_hidden, p_category_missing, p_category_override_hidden,
                         p_source_id, p_source_stock, p_source_status, p_hide_out_of_stock)
     AND p_shown_price IS NOT NULL
$$;
