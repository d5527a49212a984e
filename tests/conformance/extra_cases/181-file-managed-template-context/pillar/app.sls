app:
  name: shop
