-- What makes a product invisible to the public: hidden locally or by its override, gone upstream, in a category gone
-- upstream or hidden by its override, or (p_hide_out_of_stock: the setting hide_out_of_stock_source_products) a source
-- product the last sync found out of stock: status out_of_stock, or a stock of 0 that is not a product the source
-- never sells through the API (status unavailable). The override flags are NULL when no override row exists (left
-- joins). Inlined by the planner (LANGUAGE sql, IMMUTABLE, one expression): its AND terms still filter each table on
-- its own.
CREATE OR REPLACE FUNCTION product_visible(
  p_hidden boolean,
  p_missing boolean,
  p_override_hidden boolean,
  p_category_missing boolean,
  p_category_override_hidden boolean,
  p_source_id text,
  p_source_stock integer,
  p_source_status text,
  p_hide_out_of_stock boolean
) RETURNS boolean
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
AS $$
  SELECT NOT p_hidden AND NOT p_missing AND NOT COALESCE(p_override_hidden, false)
     AND NOT p_category_missing AND NOT COALESCE(p_category_override_hidden, false)
     AND NOT COALESCE(p_hide_out_of_stock AND p_source_id IS NOT NULL
                      AND (p_source_status = 'out_of_stock'
                           OR (COALESCE(p_source_stock, 0) <= 0 AND p_source_status IS DISTINCT FROM 'unavailable')), false)
$$;
